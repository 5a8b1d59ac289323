import { runRoles } from '../run-roles.js';

/** Every role in one process, for local use (`npm start`, `npm run up`). */
await runRoles(['api', 'relay', 'settlement', 'webhooks']);
