// Owns input hygiene that no route schema expresses, checked on path parameters, query and body
// before validation: the NUL character (U+0000), which PostgreSQL cannot store (SQLite can, and
// the API must answer the same on both stores), and nesting deeper than MAX_JSON_DEPTH, which
// would otherwise overflow the stack after parsing and answer 500.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { validation } from '../lib/errors.js';
import { inputProblem } from '../lib/validation.js';

export default fp(
  async function input(app: FastifyInstance) {
    app.addHook('preValidation', (request, _reply, done) => {
      const problem =
        inputProblem(request.params, 'params') ??
        inputProblem(request.query, 'query') ??
        inputProblem(request.body, 'body');
      done(problem === null ? undefined : validation([problem], `${problem.field}: ${problem.message}`));
    });
  },
  { name: 'input', dependencies: ['errors'] },
);
