/*
 * json.h -- JSON for ptyd.fcgi: the hand-written string escaper used on the
 * output hot path, and the checks on request bodies parsed by jansson.
 *
 * Owns: how a request field is judged (types, session_id syntax, rows/cols
 * integers and clamping), and the escaping of terminal text.  Does not own:
 * parsing (jansson), status codes (handlers.c), UTF-8 repair (utf8.c: the
 * escaper expects well-formed UTF-8).
 */
#ifndef FRONT_JSON_H
#define FRONT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "contract.h"

#define JSON_ROWS_MIN CONTRACT_ROWS_MIN /* lib/contract.h */
#define JSON_ROWS_MAX CONTRACT_ROWS_MAX
#define JSON_COLS_MIN CONTRACT_COLS_MIN
#define JSON_COLS_MAX CONTRACT_COLS_MAX

/*
 * Append s[0..len) (well-formed UTF-8) as the inside of a JSON string:
 * '"' and '\\' escaped, every control character (U+0000-U+001F, U+007F,
 * U+0080-U+009F) and U+2028/U+2029 as \n, \r, \t, \b, \f or \u00XX, the
 * rest copied.  0, or -1 if out failed.
 */
int json_escape(struct buf *out, const char *s, size_t len);

/* 1 if s is a valid session_id: 1..128 of [A-Za-z0-9._:-]. */
int json_sid_valid(const char *s);
/* 1..max of [A-Za-z0-9._:-]: a session_id or an input_id. */
int json_token_valid(const char *s, size_t max);

/*
 * Parse a request body: an object, duplicate keys rejected.  Returns the
 * object (caller json_decref) or NULL with *err set to the 400's answer.
 */
json_t *json_body_parse(const char *body, size_t len,
    enum contract_answer *err);

/*
 * session_id from the body (may be absent) and from the query (qsid, NULL
 * if absent).  Writes the id to sid (PROTO_SID_MAX + 1 bytes).  Returns 0,
 * or -1 with *err for a 400: missing, not a string, bad syntax, mismatch.
 */
int json_get_sid(json_t *obj, const char *qsid, char *sid, size_t size,
    enum contract_answer *err);

/*
 * rows or cols: absent, null or 0 give 0 (default / unchanged); an integer
 * or an integral real is clamped to [min, max].  Returns 0, or -1 with *err
 * for anything else (strings, booleans, fractions).
 */
int json_get_dim(json_t *obj, const char *key, int min, int max, uint16_t *out,
    enum contract_answer *err);

/* Clamp a number given as a double (already known integral). */
uint16_t json_clamp_dim(double v, int min, int max);

/* Serialise obj the way every response is written ({"a": 1, "b": 2}).
 * Returns a string for free(), or NULL. */
char *json_dump(json_t *obj);

#endif /* FRONT_JSON_H */
