// pi's /context report, the cache layout's line: the factor the session's reads put on the sizes is shown when
// it is not 1 (context/scale.rs), so a user sees why more stays in view on a codebase with large files.
import { it, expect } from 'vitest';
import { formatContext } from '../pi/report.js';

const snap = { metadataPool: [], activeSet: [], pinnedSet: [], sessionIndex: [] };
const cache = { epochs: 2, folds: 0, hostFolds: 0, collapsedResults: 5, collapsedArgs: 1, copies: 0, liveUnits: 900, sizeScale: 1 };

it('shows the size scale only when the reads have moved it', () => {
  expect(formatContext(snap, null, '/w', cache)).toMatch(/live output ~900 tokens$/);
  expect(formatContext(snap, null, '/w', { ...cache, sizeScale: 2.52 })).toMatch(/live output ~900 tokens; sizes ×2\.52 \(this codebase's reads are large\)$/);
});
