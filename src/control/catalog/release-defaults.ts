// How long a manifest that `release add` signs stays valid unless --expires-days says otherwise;
// apart from the catalog's code, which registering the command (for --help) does not load.
export const DEFAULT_EXPIRES_DAYS = 30;
