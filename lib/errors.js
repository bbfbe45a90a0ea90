'use strict';
// One place turns native errors into coded JS errors. The binding prefixes
// every core error message with `[CODE] ` (async napi errors cannot carry a
// custom code); here the prefix moves into `err.code`.

const PREFIX = /^\[([A-Z][A-Z0-9_]*)\] /;

// napi's own statuses (argument conversion, panics caught by catch_unwind).
const NAPI_STATUS_CODES = {
  InvalidArg: 'INVALID_ARGUMENT',
  ObjectExpected: 'INVALID_ARGUMENT',
  StringExpected: 'INVALID_ARGUMENT',
  NumberExpected: 'INVALID_ARGUMENT',
  BooleanExpected: 'INVALID_ARGUMENT',
  ArrayExpected: 'INVALID_ARGUMENT',
  FunctionExpected: 'INVALID_ARGUMENT',
  BigintExpected: 'INVALID_ARGUMENT',
  GenericFailure: 'INTERNAL',
};

/** Give a native error its stable `code` (idempotent). Non-errors pass through. */
function normalize(err) {
  if (!(err instanceof Error) || err.scmCoded) return err;
  const m = PREFIX.exec(err.message);
  if (m) {
    const message = err.message.slice(m[0].length);
    if (typeof err.stack === 'string') err.stack = err.stack.replace(err.message, message);
    err.message = message;
    err.code = m[1];
  } else if (typeof err.code === 'string' && NAPI_STATUS_CODES[err.code]) {
    err.code = NAPI_STATUS_CODES[err.code];
  } else if ((err instanceof TypeError || err instanceof RangeError) && !err.code) {
    err.code = 'INVALID_ARGUMENT';
  } else if (typeof err.code !== 'string') {
    // Every error that reaches JS carries a code; one the addon did not name is ours.
    err.code = 'INTERNAL';
  }
  Object.defineProperty(err, 'scmCoded', { value: true });
  return err;
}

/** Throw `normalize(err)`. */
function rethrow(err) {
  throw normalize(err);
}

/** Run a sync native call; coded errors out. */
function wrap(fn) {
  try {
    return fn();
  } catch (err) {
    throw normalize(err);
  }
}

/** Await a native promise (or a sync throw); coded errors out. */
async function wrapAsync(fn) {
  try {
    return await fn();
  } catch (err) {
    throw normalize(err);
  }
}

/** A facade-level error with a stable code. */
function codedError(code, message) {
  const err = code === 'INVALID_ARGUMENT' ? new TypeError(message) : new Error(message);
  err.code = code;
  Object.defineProperty(err, 'scmCoded', { value: true });
  return err;
}

/** `String(x)` that cannot throw (a value whose toString throws, a revoked proxy). */
function describe(x) {
  try {
    return String(x instanceof Error ? x.message : x);
  } catch {
    return 'an unprintable value';
  }
}

/**
 * `serialise()` (a JSON.stringify of harness messages), with what JSON cannot take — a cycle, a BigInt, nesting too
 * deep for the stack, a getter or toJSON that throws — as INVALID_MESSAGE (the original error is its `cause`). A
 * try/catch around the one stringify the call does anyway: no walk of the messages beforehand.
 */
function messagesJson(serialise) {
  return serialised(serialise, 'INVALID_MESSAGE', 'messages');
}

/** `serialise()`, what JSON cannot take thrown as `code` with `what` named (the original error is its `cause`). */
function serialised(serialise, code, what) {
  try {
    return serialise();
  } catch (cause) {
    const err = codedError(code, `${what} cannot be serialised as JSON: ${describe(cause)}`);
    err.cause = cause;
    throw err;
  }
}

module.exports = { normalize, rethrow, wrap, wrapAsync, codedError, messagesJson, serialised };
