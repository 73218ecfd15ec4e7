// Owns the import rules of src/: no import cycles, and migrations import no live code.
// Usage: node --import tsx scripts/check-imports.ts [root] (default src); exits 1 naming each problem.
//
// Type-only imports count like value imports: a cycle through types still means two modules
// that cannot be understood, moved or tested one without the other, and TypeScript erasing the
// import hides the knot rather than undoing it. Dynamic `import()` counts too, so a cycle cannot be
// hidden behind a lazy import.
//
// A regex over `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')` is enough
// for this codebase: relative specifiers ending in .js name a .ts file beside the importer, and a
// package specifier never leads back into src/.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

// A static import or re-export starts its line; a dynamic import may sit anywhere in an expression.
// Comment lines (starting with //, /* or *) are dropped first, so a quoted example never counts.
const COMMENT_LINE = /^\s*(?:\/\/|\/\*|\*).*$/gm;
const STATIC = /^(?:import|export)\s+(?:[\w$*{},\s]+?\sfrom\s*)?'([^']+)'/gm;
const DYNAMIC = /\bimport\(\s*'([^']+)'\s*\)/g;

/** The rule for migrations: frozen history imports only Kysely and its own folder (helpers.ts). */
const MIGRATIONS = join('db', 'migrations');
const MIGRATION_PACKAGES = new Set(['kysely']);

function listFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) listFiles(path, out);
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** The specifiers a file imports, in order of appearance. */
export function specifiers(text: string): string[] {
  const code = text.replace(COMMENT_LINE, '');
  return [...code.matchAll(STATIC), ...code.matchAll(DYNAMIC)].map((m) => m[1]!);
}

function resolveLocal(from: string, spec: string): string {
  const target = resolve(dirname(from), spec);
  return target.endsWith('.js') ? `${target.slice(0, -3)}.ts` : target;
}

/**
 * The knots of the graph (strongly connected components, Tarjan): files each reachable from every
 * other, so one report names all of a knot rather than whichever loop a walk meets first.
 */
function knots(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const knot: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      knot.push(member);
    } while (member !== file);
    if (knot.length > 1 || graph.get(file)?.includes(file)) found.push(knot.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** A shortest loop from `start` back to itself inside its knot, to show how the knot closes. */
function loopThrough(graph: Map<string, string[]>, knot: string[], start: string): string[] {
  const inKnot = new Set(knot);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i]!;
    for (const next of graph.get(file) ?? []) {
      if (next === start) {
        const path = [file];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (inKnot.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, file);
        queue.push(next);
      }
    }
  }
  return [start];
}

/** Every broken rule under root, one line each; empty when the tree is clean. */
export function importProblems(root: string): string[] {
  const problems: string[] = [];
  const graph = new Map<string, string[]>();
  for (const file of listFiles(root)) {
    const local: string[] = [];
    const inMigrations = relative(root, dirname(file)) === MIGRATIONS;
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      const isLocal = spec.startsWith('.');
      const target = isLocal ? resolveLocal(file, spec) : spec;
      if (isLocal) local.push(target);
      if (inMigrations && (isLocal ? dirname(target) !== dirname(file) : !MIGRATION_PACKAGES.has(spec))) {
        problems.push(
          `${relative(root, file)} imports ${spec}: a migration is frozen history and imports no live code`,
        );
      }
    }
    graph.set(file, local);
  }
  for (const knot of knots(graph)) {
    const loop = loopThrough(graph, knot, knot[0]!).map((f) => relative(root, f));
    const others = knot.length > loop.length - 1 ? ` (the knot also holds ${knot.length - loop.length + 1} more)` : '';
    problems.push(
      `import cycle: ${loop.join(' → ')}${others}; files: ${knot.map((f) => relative(root, f)).join(', ')}`,
    );
  }
  return problems;
}

// Run as a script (not imported: bundled into a test, this module shares the test file's URL).
if (/[\\/]check-imports\.[jt]s$/.test(process.argv[1] ?? '')) {
  const root = resolve(process.argv[2] ?? 'src');
  const problems = importProblems(root);
  for (const p of problems) console.error(p.split('/').join(sep));
  if (problems.length > 0) {
    console.error(`${problems.length} import problem(s) under ${relative(process.cwd(), root) || '.'}`);
    process.exit(1);
  }
  console.log(`imports: no cycles, migrations import no live code (${relative(process.cwd(), root)})`);
}
