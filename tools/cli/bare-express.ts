import express from 'express';

/**
 * The reference for replay throughput: a bare Express app that parses a JSON body and answers
 * a stored JSON string of the same size, with no auth, cache or database. Listens on PORT.
 */
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json({ limit: 16_384 }));
const answer = JSON.stringify({
  id: '0190a6e2-7f6a-7d3c-8a4b-123456789abc',
  object: 'payment',
  amount: 1000,
  currency: 'EUR',
  status: 'pending',
  source: 'tok_visa',
  description: null,
  metadata: {},
  created_at: new Date().toISOString(),
});
app.post('/payments', (_req, res) => {
  res.status(202).type('application/json').send(answer);
});
app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
