/*
 * json.c -- JSON escaping and request field checks (json.h).
 *
 * Owns: the escaper that every output event goes through, and the rules for
 * request fields.  Does not own: the JSON grammar (jansson parses every
 * request body; nothing here parses JSON by hand).
 */
#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "json.h"
#include "proto.h"

static const char json_hex[] = "0123456789abcdef";

/*
 * Bytes that may be copied as they are: everything but C0 controls, DEL,
 * '"', '\\', and the lead bytes 0xc2 and 0xe2, which start the C1 controls
 * and U+2028/U+2029 (json_escape looks at the whole sequence then).
 */
static int
json_plain(unsigned char c)
{
	return (c >= 0x20 && c != 0x7f && c != '"' && c != '\\' && c != 0xc2 &&
	    c != 0xe2);
}

/*
 * json_plain for eight bytes at once (terminal output is mostly long plain
 * runs).  Each term is nonzero in some high bit iff some byte matches; a
 * borrow can only start at a matching byte, so "any" is exact.
 */
#define JSON_ONES	    0x0101010101010101ULL
#define JSON_HIGH	    0x8080808080808080ULL
#define JSON_HAS_ZERO(x)    (((x)-JSON_ONES) & ~(x))
#define JSON_HAS_BYTE(w, c) JSON_HAS_ZERO((w) ^ (JSON_ONES * (c)))

static int
json_plain8(uint64_t w)
{
	uint64_t bad;

	bad = ((w - JSON_ONES * 0x20) & ~w) | /* a byte below 0x20 */
	    JSON_HAS_BYTE(w, 0x7f) | JSON_HAS_BYTE(w, '"') |
	    JSON_HAS_BYTE(w, '\\') | JSON_HAS_BYTE(w, 0xc2) |
	    JSON_HAS_BYTE(w, 0xe2);
	return ((bad & JSON_HIGH) == 0);
}

/*
 * The end of the plain run that starts at p[i]: sixteen bytes at a time
 * with SSE2 (every x86-64 has it; with eight viewers of one busy terminal
 * this loop was a third of ptyd.fcgi's time, eight bytes at a time), then
 * eight, then one.
 */
static size_t
json_plain_end(const unsigned char *p, size_t i, size_t len)
{
	uint64_t w;
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	const __m128i ctl = _mm_set1_epi8((char)(0x20 ^ 0x80));
	__m128i	      v, bad;
	int	      m;

	for (; i + 16 <= len; i += 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		/* Unsigned "below 0x20" as a signed compare, top bit flipped. */
		bad = _mm_cmplt_epi8(_mm_xor_si128(v, flip), ctl);
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
		bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
		bad = _mm_or_si128(bad,
		    _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xc2)));
		bad = _mm_or_si128(bad,
		    _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xe2)));
		if ((m = _mm_movemask_epi8(bad)) != 0)
			return (i + (size_t)__builtin_ctz((unsigned int)m));
	}
#endif
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, sizeof(w));
		if (!json_plain8(w))
			break;
	}
	while (i < len && json_plain(p[i]))
		i++;
	return (i);
}

static int
json_add_u(struct buf *out, unsigned int cp)
{
	char e[6] = { '\\', 'u', '0', '0', '0', '0' };

	e[2] = json_hex[(cp >> 12) & 0xf];
	e[3] = json_hex[(cp >> 8) & 0xf];
	e[4] = json_hex[(cp >> 4) & 0xf];
	e[5] = json_hex[cp & 0xf];
	return (buf_add(out, e, sizeof(e)));
}

/* Escape the character at p[i] (not plain: json_plain said so) onto out.
 * Returns the bytes of p it took, or -1. */
static int
json_escape_one(struct buf *out, const unsigned char *p, size_t i,
    size_t len)
{
	static const char *const two[128] = {
		['"'] = "\\\"",
		['\\'] = "\\\\",
		['\n'] = "\\n",
		['\r'] = "\\r",
		['\t'] = "\\t",
		['\b'] = "\\b",
		['\f'] = "\\f",
	};
	unsigned char c = p[i];

	if (c < 128 && two[c] != NULL)
		return (buf_add(out, two[c], 2) == -1 ? -1 : 1);
	if (c < 0x20 || c == 0x7f)
		return (json_add_u(out, c) == -1 ? -1 : 1);
	if (c == 0xc2 && i + 1 < len && p[i + 1] < 0xa0)
		/* C1 controls U+0080-U+009F. */
		return (json_add_u(out, p[i + 1]) == -1 ? -1 : 2);
	if (c == 0xe2 && i + 2 < len && p[i + 1] == 0x80 &&
	    (p[i + 2] == 0xa8 || p[i + 2] == 0xa9))
		/* U+2028, U+2029: line breaks to JavaScript. */
		return (json_add_u(out, 0x2000u | (p[i + 2] & 0x3fu)) == -1 ?
			-1 :
			3);
	/* 0xc2 or 0xe2 leading anything else: copied. */
	return (buf_add(out, p + i, 1) == -1 ? -1 : 1);
}

int
json_escape(struct buf *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t		     i = 0, j;
	int		     n;

	/* Nothing to escape is the common case: one reservation for it. */
	if (buf_reserve(out, len) == -1)
		return (-1);
	while (i < len) {
		j = json_plain_end(p, i, len);
		if (j > i && buf_add(out, p + i, j - i) == -1)
			return (-1);
		if ((i = j) >= len)
			break;
		if ((n = json_escape_one(out, p, i, len)) == -1)
			return (-1);
		i += (size_t)n;
	}
	return (0);
}

int
json_sid_valid(const char *s)
{
	return (contract_sid_valid(s));
}

int
json_token_valid(const char *s, size_t max)
{
	return (contract_token_valid(s, max));
}

json_t *
json_body_parse(const char *body, size_t len, enum contract_answer *err)
{
	json_error_t jerr;
	json_t	    *obj;

	/* NUL is allowed in strings because terminal input carries it
	 * (Ctrl-@); every text field other than input data checks for it. */
	obj = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &jerr);
	if (obj == NULL) {
		*err = CONTRACT_A_JSON_MALFORMED;
		return (NULL);
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		*err = CONTRACT_A_JSON_NOT_OBJECT;
		return (NULL);
	}
	return (obj);
}

int
json_get_sid(json_t *obj, const char *qsid, char *sid, size_t size,
    enum contract_answer *err)
{
	json_t	   *v;
	const char *s = NULL;

	v = obj != NULL ? json_object_get(obj, "session_id") : NULL;
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_string(v)) {
			*err = CONTRACT_A_SID_NOT_STRING;
			return (-1);
		}
		s = json_string_value(v);
		/* Bodies are parsed with JSON_ALLOW_NUL (input may hold NUL):
		 * an id with "\u0000" inside must not pass as its prefix. */
		if (json_string_length(v) != strlen(s) || !json_sid_valid(s)) {
			*err = CONTRACT_A_SID_INVALID;
			return (-1);
		}
	}
	if (qsid != NULL) {
		if (!json_sid_valid(qsid)) {
			*err = CONTRACT_A_SID_INVALID;
			return (-1);
		}
		if (s != NULL && strcmp(s, qsid) != 0) {
			*err = CONTRACT_A_SID_DIFFER;
			return (-1);
		}
		s = qsid;
	}
	if (s == NULL) {
		*err = CONTRACT_A_SID_MISSING;
		return (-1);
	}
	if (strlen(s) >= size) {
		*err = CONTRACT_A_SID_INVALID;
		return (-1);
	}
	strcpy(sid, s);
	return (0);
}

uint16_t
json_clamp_dim(double v, int min, int max)
{
	if (v == 0)
		return (0);
	if (v < min)
		return ((uint16_t)min);
	if (v > max)
		return ((uint16_t)max);
	return ((uint16_t)v);
}

int
json_get_dim(json_t *obj, const char *key, int min, int max, uint16_t *out,
    enum contract_answer *err)
{
	json_t *v;
	double	d;

	*out = 0;
	v = json_object_get(obj, key);
	if (v == NULL || json_is_null(v))
		return (0);
	if (json_is_integer(v)) {
		d = (double)json_integer_value(v);
	} else if (json_is_real(v)) {
		d = json_real_value(v);
		if (!isfinite(d) || d != floor(d))
			goto bad;
	} else
		goto bad;
	*out = json_clamp_dim(d, min, max);
	return (0);
bad:
	*err = strcmp(key, "rows") == 0 ? CONTRACT_A_ROWS : CONTRACT_A_COLS;
	return (-1);
}

char *
json_dump(json_t *obj)
{
	/*
	 * Without JSON_COMPACT jansson writes ", " and ": " as DESIGN wants.
	 * Reals (health's uptime, in seconds to the microsecond) with 15
	 * significant digits: 17, the default, prints 0.1 as
	 * 0.10000000000000001.
	 */
	return (json_dumps(obj, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)));
}
