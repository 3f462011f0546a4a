// A minimal interactive client for the agent's shell WebSocket, for the README walkthrough
// (the `sbx` CLI is the real client). Usage:
//   node scripts/ws-shell.mjs <ws_base_url> <token> [shell_session_id]
// The token travels in the first frame, never in the URL.
import WebSocket from 'ws';

const [base, token, shellId] = process.argv.slice(2);
if (base === undefined || token === undefined) {
  console.error('usage: node scripts/ws-shell.mjs <ws_base_url> <token> [shell_session_id]');
  process.exit(2);
}
const ws = new WebSocket(`${base.replace(/\/$/, '')}/v1/shell/ws`);
const size = () => ({ cols: process.stdout.columns ?? 80, rows: process.stdout.rows ?? 24 });
const restore = () => process.stdin.isTTY && process.stdin.setRawMode(false);

ws.on('open', () => {
  ws.send(JSON.stringify({ type: 'auth', token }));
  ws.send(JSON.stringify({ type: 'start', ...size(), ...(shellId ? { shell_session_id: shellId } : {}) }));
  if (process.stdin.isTTY) process.stdin.setRawMode(true);
  process.stdin.on('data', (bytes) =>
    ws.send(JSON.stringify({ type: 'stdin', data: bytes.toString('base64'), encoding: 'base64' })),
  );
  process.stdout.on('resize', () => ws.send(JSON.stringify({ type: 'resize', ...size() })));
});
ws.on('message', (raw) => {
  const frame = JSON.parse(raw.toString('utf8'));
  if (frame.type === 'stdout' || frame.type === 'stderr') {
    process.stdout.write(Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8'));
  } else if (frame.type === 'ready') {
    process.stderr.write(`[shell ${frame.shell_session_id}]\r\n`);
  } else if (frame.type === 'error') {
    process.stderr.write(`[error ${frame.error.code}: ${frame.error.message}]\r\n`);
  } else if (frame.type === 'exit') {
    restore();
    process.exit(frame.code);
  }
});
ws.on('close', (code, reason) => {
  restore();
  if (code !== 1000) process.stderr.write(`\r\n[closed ${code} ${reason.toString()}]\r\n`);
  process.exit(code === 1000 ? 0 : 1);
});
ws.on('error', (err) => {
  restore();
  console.error(`cannot connect: ${err.message}`);
  process.exit(1);
});
