/**
 * `--smoke` (with --quick): the smallest scales, only for the schema test,
 * which checks the document's shape in well under 90 s on 2 cores. Its
 * figures are not meant to be read; the document says smoke: true.
 */
export const mode = { smoke: false };
export const pick = <T>(quick: boolean, full: T, q: T, smoke: T): T => (!quick ? full : mode.smoke ? smoke : q);
