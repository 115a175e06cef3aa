// What of the steward package a host runs (relative to the package root): the bundles of the
// programs a host runs (docs/design.md §15), which need no node_modules, and their launchers. steward-control
// (its bundle imports better-sqlite3, a native addon, from node_modules) runs elsewhere and is
// left behind, as are dist/src and dist/test (tsc's output, for the tests). `agentctl install`
// copies these, the Debian package ships them, and a release of the app steward is made of them.
export const HOST_PROGRAMS = ['agentctl', 'steward-helper', 'steward-agent'];
export const CODE_ITEMS = ['package.json', ...HOST_PROGRAMS.flatMap((p) => [`bin/${p}.js`, `dist/bundle/${p}`]), 'systemd', 'docs', 'README.md'];
