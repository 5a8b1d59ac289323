import { runRoles } from '../run-roles.js';

await runRoles(['acquirer']);
