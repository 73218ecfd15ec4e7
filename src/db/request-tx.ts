// Owns the request transaction: one store transaction that a whole request handler runs in, so
// what the handler changes and what it answers can be committed together (the Idempotency-Key
// plugin, src/plugins/idempotency.ts, records the answer in it). While it is open, the store joins
// it: `store.transact(work)` runs `work` in a savepoint of it (rolled back alone when `work`
// throws, its onCommit listeners kept until the request transaction commits), and a statement run
// on the store itself runs in it too (on SQLite the connection is the transaction's alone; on
// PostgreSQL it must see the transaction's own writes). Outside a request transaction nothing
// changes.
import { AsyncLocalStorage } from 'node:async_hooks';
import { CompiledQuery } from 'kysely';
import type { Builder, Executor, Tx } from './executor.js';

interface Scope {
  tx: Tx;
  /** False once the request transaction has ended: work spawned in it then runs on the store. */
  open: boolean;
  savepoints: number;
}

const scopes = new AsyncLocalStorage<Scope>();

/** The open request transaction of the running code, if any. */
export function requestTx(): Tx | undefined {
  const scope = scopes.getStore();
  return scope?.open ? scope.tx : undefined;
}

/** Runs `fn` with `tx` as the request transaction; it ends (for the store) when `fn` settles. */
export async function inRequestTx<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
  const scope: Scope = { tx, open: true, savepoints: 0 };
  try {
    return await scopes.run(scope, fn);
  } finally {
    scope.open = false;
  }
}

/** Runs code outside any request transaction (work queued for later by whoever happens to start it). */
export const outsideRequestTx = <T>(fn: () => T): T => scopes.exit(fn);

/** `work` in a savepoint of the open request transaction (see the top of this file). */
export async function joinRequestTx<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
  const scope = scopes.getStore()!;
  const name = `request_tx_${++scope.savepoints}`;
  const outer = scope.tx;
  const raw = (text: string) => outer.executeQuery(CompiledQuery.raw(text));
  const listeners: (() => void)[] = [];
  // Not the request transaction's last statement: nothing here may ride on its COMMIT, nor wait for it.
  const tx: Tx = {
    ...outer,
    onCommit: (fn) => void listeners.push(fn),
    withCommit: undefined,
    addAtCommit: undefined,
  };
  await raw(`savepoint ${name}`);
  let value: T;
  try {
    value = await work(tx);
  } catch (err) {
    await raw(`rollback to savepoint ${name}`);
    await raw(`release savepoint ${name}`);
    throw err;
  }
  await raw(`release savepoint ${name}`);
  for (const fn of listeners) outer.onCommit(fn);
  return value;
}

/**
 * `root`, except that while a request transaction is open every statement runs in it: the store's own executor, so code written against the store needs no change.
 */
export function joining(root: Executor): Executor {
  const on = (): Executor => requestTx() ?? root;
  return {
    dialect: root.dialect,
    selectFrom: ((...a: Parameters<Builder['selectFrom']>) => on().selectFrom(...a)) as Builder['selectFrom'],
    insertInto: ((...a: Parameters<Builder['insertInto']>) => on().insertInto(...a)) as Builder['insertInto'],
    updateTable: ((...a: Parameters<Builder['updateTable']>) => on().updateTable(...a)) as Builder['updateTable'],
    deleteFrom: ((...a: Parameters<Builder['deleteFrom']>) => on().deleteFrom(...a)) as Builder['deleteFrom'],
    selectNoFrom: ((...a: Parameters<Builder['selectNoFrom']>) => on().selectNoFrom(...a)) as Builder['selectNoFrom'],
    with: ((...a: Parameters<Builder['with']>) => on().with(...a)) as Builder['with'],
    fn: root.fn,
    getExecutor: () => on().getExecutor(),
    executeQuery: (query) => on().executeQuery(query),
    run: (q, params) => on().run(q, params),
    first: (q, params) => on().first(q, params),
  };
}
