// The pi package's extension entry (package.json "pi.extensions"). It only re-exports pi/index.js: pi names a
// package's extension after the package when its entry is `index.js` or `extensions/index.js`, so pi's list of
// loaded extensions shows "self-context-manager" (with pi/index.js as the entry it showed "self-context-manager:pi").
export { default } from "../pi/index.js";
