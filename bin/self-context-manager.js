#!/usr/bin/env node
'use strict';
// npx self-context-manager <command> …: see lib/cli/main.js.
require('../lib/cli/main.js')
  .main(process.argv.slice(2))
  .then((status) => {
    process.exitCode = status;
  });
