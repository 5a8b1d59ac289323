import http from 'node:http';

/**
 * The endpoint the driver's own cost is measured against: node:http answering POST /payments
 * with 202 and a payment-sized JSON body naming the request's Idempotency-Key as its id (so a
 * storm's invariants hold: one id per key), and GET /cpu with this process's CPU time. No
 * framework, no parsing beyond reading the body: as little server as an answer can cost, so
 * the load generator is what runs out first.
 */
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/cpu') {
    const cpu = process.cpuUsage();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000 }));
    return;
  }
  req.resume();
  req.on('end', () => {
    const key = String(req.headers['idempotency-key'] ?? '');
    const body = JSON.stringify({
      id: key,
      object: 'payment',
      amount: 1000,
      currency: 'EUR',
      status: 'pending',
      source: 'tok_visa',
      description: null,
      metadata: {},
      created_at: '2026-01-01T00:00:00.000Z',
    });
    res.writeHead(202, { 'content-type': 'application/json', 'idempotent-replayed': 'false' });
    res.end(body);
  });
});
server.keepAliveTimeout = 30_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
