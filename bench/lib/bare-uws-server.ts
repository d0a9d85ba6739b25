import uWS from 'uWebSockets.js';

/**
 * Baseline for bench:gateway, run as its own process: answers every GET with $BARE_BODY as
 * application/json on 127.0.0.1 (free port, printed as "listening <port>"). Exits on SIGTERM.
 */
const body = process.env.BARE_BODY ?? '{}';
const app = uWS.App();
app.get('/*', (res) => {
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(body);
  });
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    console.error('cannot listen');
    process.exit(1);
  }
  console.log(`listening ${uWS.us_socket_local_port(socket as unknown as uWS.us_socket)}`);
  process.on('SIGTERM', () => {
    uWS.us_listen_socket_close(socket);
    process.exit(0);
  });
});
