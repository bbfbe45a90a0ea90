'use strict';
// Hand-written public entry; the facade lives in lib/, the napi-generated
// loader in native.js.
module.exports = require('./lib/index.js');
