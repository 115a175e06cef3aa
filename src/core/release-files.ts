// The names of a release's own files, apart from their schemas (release-schemas.ts): the
// extraction worker refuses a tarball entry named as the marker without loading zod.
export const RELEASE_FILE_NAME = 'steward-release.json';
export const MARKER_FILE_NAME = '.steward-valid';
export const MARKER_SCHEMA_VERSION = 1;
