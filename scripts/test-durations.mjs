// A second node:test reporter: after the run, prints the test files whose tests took longest, so
// the suite's time can be spent where it buys coverage (docs/reliability.md, "CI time").
// A file's time is the sum of its top-level tests and suites as the file's own process measured
// them (they run one after another within a file); module loading and start-up are not in it.
const SHOWN = Number(process.env.TEST_DURATIONS_SHOWN ?? 15);

export default async function* durations(source) {
  const files = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    files.set(file, (files.get(file) ?? 0) + (details?.duration_ms ?? 0) / 1000);
  }
  const rows = [...files].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, seconds]) => sum + seconds, 0);
  const cwd = `${process.cwd()}/`;
  yield `\nslowest test files (${rows.length} files, ${total.toFixed(0)} s in their tests):\n`;
  for (const [file, seconds] of rows.slice(0, SHOWN)) {
    yield `${seconds.toFixed(1).padStart(7)} s  ${file
      .replace(cwd, '')
      .replace(/^\.test-build\//, '')
      .replace(/\.js$/, '.ts')}\n`;
  }
}
