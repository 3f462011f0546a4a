/** node-pty's loader for its native binding (build/Release, build/Debug or prebuilds). */
declare module 'node-pty/lib/utils.js' {
  const utils: {
    loadNativeModule(name: string): { readonly dir: string; readonly module: unknown };
  };
  export default utils;
}
