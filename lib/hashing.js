'use strict';
// Stable serialisation and the five hashes (implementation-plan §2).
// JSON values are serialised here with JSON.stringify, so JavaScript decides
// what undefined / NaN / toJSON become, exactly as a pure-JS client would.

const { native } = require('./native.js');
const { wrap, codedError } = require('./errors.js');

function toJson(value, what) {
  let json;
  try {
    json = JSON.stringify(value);
  } catch (cause) {
    // A cycle, a BigInt, nesting too deep, a throwing getter or toJSON.
    const err = codedError('INVALID_ARGUMENT', `${what}: value is not JSON-serialisable (${cause instanceof Error ? cause.message : 'a thrown value'})`);
    err.cause = cause;
    throw err;
  }
  if (json === undefined) throw codedError('INVALID_ARGUMENT', `${what}: value is not JSON-serialisable`);
  return json;
}

/** JSON with object keys sorted (UTF-16 order) and no whitespace. */
function stableStringify(value) {
  return wrap(() => native.stableStringifyJson(toJson(value, 'stableStringify')));
}

/** SHA-256(stable({type, source})) or, without a source, SHA-256(stable({type, "xt/id": assignedId})). */
function identityHash(type, source, assignedId) {
  const sourceJson = source == null ? undefined : toJson(source, 'identityHash source');
  return wrap(() => native.identityHash(type, sourceJson, assignedId ?? undefined));
}

/** SHA-256 of raw bytes (a string hashes as its UTF-8 bytes). */
function fileHash(bytes) {
  if (bytes instanceof Uint8Array && !Buffer.isBuffer(bytes)) {
    bytes = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return wrap(() => native.fileHash(bytes));
}

/** SHA-256 of the content string; null for null content. */
function contentHash(content) {
  return wrap(() => native.contentHash(content ?? undefined)) ?? null;
}

/** SHA-256 of the stable serialisation of the type's metadata fields. */
function metadataHash(fields) {
  return wrap(() => native.metadataHashJson(toJson(fields, 'metadataHash')));
}

/** SHA-256(stable({file_hash, content_hash, metadata_hash})). */
function objectHash(fileHashValue, contentHashValue, metadataHashValue) {
  return wrap(() =>
    native.objectHash(fileHashValue ?? undefined, contentHashValue ?? undefined, metadataHashValue),
  );
}

/** This machine's filesystem id: SHA-256 of /etc/machine-id (hostname as fallback). */
function defaultFilesystemId() {
  return wrap(() => native.defaultFilesystemId());
}

module.exports = {
  stableStringify,
  identityHash,
  fileHash,
  contentHash,
  metadataHash,
  objectHash,
  defaultFilesystemId,
};
