// features.mjs -- browser tests of what users expect of the page (issue 15).
export function featureTests(test, h) {
}
