/*
 * safetext.c -- text another account wrote, made safe to show to root
 * (safetext.h): in ptyd-pool's log, on the terminal of root's ptydctl
 * --pools.  No I/O.
 */
#include <string.h>

#include "safetext.h"

/*
 * The length of the UTF-8 sequence at s (at most n bytes) if it is well
 * formed (no overlong form, no surrogate, at most U+10FFFF) and not a
 * character that steers a terminal or the reading of a line: C1
 * controls (U+0080-009F: U+009B is CSI to some terminals), the
 * directional marks, embeddings, overrides and isolates.  0 otherwise.
 */
static size_t
safetext_utf8(const unsigned char *s, size_t n)
{
	unsigned int cp;
	size_t	     want, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		want = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		want = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		want = 4;
		cp = s[0] & 0x07;
	} else
		return (0);
	if (n < want)
		return (0);
	for (i = 1; i < want; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return (0);
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((want == 3 && cp < 0x800) || (want == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return (0);
	if (cp <= 0x9f || cp == 0x200e || cp == 0x200f ||
	    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return (0);
	return (want);
}

size_t
safetext(char *out, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t		     i = 0, o = 0, n;

	while (i < len) {
		if (s[i] >= 0x20 && s[i] < 0x7f) {
			out[o++] = (char)s[i++];
			continue;
		}
		if (s[i] >= 0x80 && (n = safetext_utf8(s + i, len - i)) != 0) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		out[o++] = '?';
		i++;
	}
	out[o] = '\0';
	return (o);
}
