/**
 * The `code` of a Node system error (`ENOENT`, `EEXIST`…), or undefined. Duck-typed, not
 * `instanceof Error`: errors from Node's fs may come from another realm (jest's vm contexts).
 */
export function errnoCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

/** Whether `err` is the Node system error `code`. */
export function isErrno(err: unknown, code: string): boolean {
  return errnoCode(err) === code;
}
