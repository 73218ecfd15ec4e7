// Owns compiling route schemas into request validators (Ajv) and response serializers
// (fast-json-stringify), once per process for each distinct schema. Building an app compiles a
// few hundred of them, which was over half of its cost; production builds one app, but the tests
// build hundreds per run. A compiled function keeps nothing between calls, so one serves every app
// in the process; a schema is known by its JSON, so equal schemas share it whatever object holds them.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler } from 'fastify';
import { AJV as ajv } from './validation.js';

const validators = new Map<string, ReturnType<FastifySchemaCompiler<unknown>>>();

/** Fastify's validator compiler: strict bodies, coerced query strings and params (validation.ts). */
export const compileValidator: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const part = httpPart === 'body' ? 'body' : 'other';
  const key = `${part}\u0000${JSON.stringify(schema)}`;
  let validate = validators.get(key);
  if (validate === undefined) {
    validate = ajv[part].compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
    validators.set(key, validate);
  }
  return validate;
};

type Serializer = (data: unknown) => string;
const selectSerializer = SerializerSelector();
const serializers = new Map<string, Serializer>();

/** Fastify's serializer factory (`schemaController.compilersFactory.buildSerializer`), caching. */
export function buildSerializer(externalSchemas?: unknown, options?: Parameters<typeof selectSerializer>[1]) {
  const compile = selectSerializer(externalSchemas, options);
  const context = JSON.stringify([externalSchemas ?? null, options ?? null]);
  return (route: Parameters<typeof compile>[0]): Serializer => {
    const key = `${context}\u0000${JSON.stringify(route.schema)}`;
    let serialize = serializers.get(key);
    if (serialize === undefined) {
      serialize = compile(route);
      serializers.set(key, serialize);
    }
    return serialize;
  };
}

/**
 * The same compilers, each schema compiled on its route's first use instead of when the app starts
 * (`SCHEMA_COMPILE=lazy`). A process that answers a few routes and ends (a test file's builds a
 * few hundred apps and uses a handful of routes in each) skips compiling the rest; a server keeps
 * the default, so a schema that cannot compile stops it at start-up, not at a first request.
 */
export const compileValidatorLazily: FastifySchemaCompiler<unknown> = (route) => {
  let validate: ReturnType<FastifySchemaCompiler<unknown>> | undefined;
  const lazy = ((data: unknown) => {
    validate ??= compileValidator(route);
    const result = validate(data);
    // Fastify reads a failed validation's errors from the function it was given.
    (lazy as { errors?: unknown }).errors = (validate as { errors?: unknown }).errors;
    return result;
  }) as ReturnType<FastifySchemaCompiler<unknown>>;
  return lazy;
};

export function buildSerializerLazily(externalSchemas?: unknown, options?: Parameters<typeof selectSerializer>[1]) {
  const compile = buildSerializer(externalSchemas, options);
  return (route: Parameters<typeof compile>[0]): Serializer => {
    let serialize: Serializer | undefined;
    return (data) => {
      serialize ??= compile(route);
      return serialize(data);
    };
  };
}
