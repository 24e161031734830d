// Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
// memlab (Meta's heap analyzer, @memlab/core from test/npm) reads a
// .heapsnapshot and computes its dominators and retained sizes the way it
// does for Chrome's: prints {nodes, top: {id, name, retained}, retained:
// [[id, retained size], ...]}, top being the node other than the root
// that retains the most.
"use strict";
const { utils, analysis, config } = require("@memlab/core");

(async () => {
  config.muteConsole = true;
  const heap = await utils.getSnapshotFromFile(process.argv[2], {});
  if (!heap) throw new Error("memlab could not read " + process.argv[2]);
  analysis.preparePathFinder(heap);
  const retained = [];
  let top = null;
  heap.nodes.forEach((node) => {
    retained.push([node.id, node.retainedSize]);
    if (node.id !== 1 && (!top || node.retainedSize > top.retainedSize)) top = node;
  });
  console.log(JSON.stringify({
    nodes: heap.nodes.length,
    top: { id: top.id, name: top.name, retained: top.retainedSize },
    retained,
  }));
})().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(1);
});
