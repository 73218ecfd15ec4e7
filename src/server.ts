// Owns the process: load config, build the app, listen, and shut down gracefully on signals.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ConfigError, loadConfig } from './config.js';
import { keepGeneratedSecret } from './config-secret.js';

/**
 * Opt-in (BENCH_EVENT_LOOP=1, set by `npm run bench` only): samples how late the event loop runs
 * its timers, the time every request waits behind whatever holds the loop. SIGUSR2 writes the
 * percentiles since the previous SIGUSR2 as one JSON line on stdout and starts afresh, so the
 * bench can read them for its measured window alone. Off, nothing is sampled.
 */
function watchEventLoop(): void {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
  process.on('SIGUSR2', () => {
    const line = {
      eventLoopDelayMs: {
        p50: ms(h.percentile(50)),
        p99: ms(h.percentile(99)),
        p999: ms(h.percentile(99.9)),
        max: ms(h.max),
        mean: ms(h.mean),
        samples: h.count,
      },
    };
    h.reset();
    process.stdout.write(`${JSON.stringify(line)}\n`);
  });
}

async function main() {
  if (process.env.BENCH_EVENT_LOOP === '1') watchEventLoop();
  let config: ReturnType<typeof loadConfig>;
  try {
    config = keepGeneratedSecret(loadConfig());
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }

  // The app (and every dependency) loads only once the configuration is known to be good, so a
  // bad variable is reported at once instead of after seconds of module loading.
  const { buildApp } = await import('./app.js');
  const { ensureAdmin } = await import('./bootstrap.js');
  const app = await buildApp(config);
  if (config.jwtSecretGenerated) {
    app.log.warn('JWT_SECRET is not set: using a random secret, so tokens and API keys end with this process');
  } else if (config.jwtSecretFile !== null) {
    app.log.warn(
      { file: config.jwtSecretFile },
      'JWT_SECRET is not set: using the secret kept beside the store (set JWT_SECRET in production)',
    );
  }
  const admin = await ensureAdmin(app.ctx.store, config);
  if (admin?.generatedPassword) {
    process.stdout.write(
      `\nCreated the first admin. Log in with:\n  email:    ${admin.email}\n  password: ${admin.generatedPassword}\n` +
        'This password is shown once; change it with POST /api/v1/auth/password.\n\n',
    );
  } else if (admin) {
    app.log.info({ email: admin.email }, 'created the first admin from ADMIN_EMAIL');
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    const drainMs = config.shutdownDrainMs;
    const force = setTimeout(() => {
      app.log.error(`shutdown took over ${drainMs + 10_000} ms; exiting`);
      process.exit(1);
    }, drainMs + 10_000);
    force.unref();
    try {
      if (drainMs > 0) {
        // Behind a load balancer: fail its health check at once and keep serving until it has
        // taken this instance out, so no request meets a closed listener.
        app.ctx.lifecycle.draining = true;
        app.log.info({ signal, drainMs }, 'draining: /readyz answers 503, requests are still served');
        await new Promise((resolve) => setTimeout(resolve, drainMs));
      }
      app.log.info({ signal }, 'shutting down: finishing in-flight requests');
      await app.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ host: config.host, port: config.port });
  const store = config.store.kind === 'sqlite' ? `SQLite ${config.store.path}` : 'PostgreSQL';
  // The port actually bound: with PORT=0 the OS picks one, and this line is how to learn which.
  const bound = app.server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  app.log.info(`API on http://${host}:${port}/api/v1 (docs at /docs), store: ${store}`);
}

main().catch((err) => {
  process.stderr.write(`Start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
