// pi's /context report, the cache layout's line: the factor the session's reads put on the sizes is shown when
// it is not 1 (context/scale.rs), so a user sees why more stays in view on a codebase with large files.
import { it, expect } from 'vitest';
import { formatContext } from '../pi/report.js';

const snap = { metadataPool: [], activeSet: [], pinnedSet: [], sessionIndex: [] };
const cache = { epochs: 2, folds: 0, hostFolds: 0, collapsedResults: 5, collapsedArgs: 1, copies: 0, liveUnits: 900, sizeScale: 1 };

it('says how files on disk are followed: off, or the directories watched and how many are polled', () => {
  expect(formatContext(snap, null, '/w', null, null, { watchedDirs: null, polledDirs: 0 })).toMatch(/\nWatcher: off \(changes on disk are seen when a file is read or activated\)$/);
  expect(formatContext(snap, null, '/w', null, null, { watchedDirs: 1, polledDirs: 0 })).toMatch(/\nWatcher: 1 directory$/);
  expect(formatContext(snap, null, '/w', cache, null, { watchedDirs: 3, polledDirs: 2 })).toMatch(/\nWatcher: 3 directories, 2 polled \(a network filesystem, or watchPoll "always"\)\nCache layout: /);
});

it('shows the size scale only when the reads have moved it', () => {
  expect(formatContext(snap, null, '/w', cache)).toMatch(/live output ~900 tokens$/);
  expect(formatContext(snap, null, '/w', { ...cache, sizeScale: 2.52 })).toMatch(/live output ~900 tokens; sizes ×2\.52 \(this codebase's reads are large\)$/);
});
