/*
 * cast.c -- asciicast v2 lines (cast.h).
 *
 * Owns: the text of each line.  Does not own: what is well-formed UTF-8
 * (fcgi/utf8.c) or JSON's escapes (fcgi/json.c): both are the live
 * stream's own, linked here, so a recording's text cannot drift from it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cast.h"
#include "json.h"

#define CAST_TEXT_MAX (4 * 1024 * 1024) /* a sanitised chunk at most */

void
cast_init(struct cast *c)
{
	utf8_init(&c->u8);
	buf_init(&c->text, CAST_TEXT_MAX);
}

void
cast_free(struct cast *c)
{
	buf_free(&c->text);
}

int
cast_header(struct buf *out, unsigned int cols, unsigned int rows,
    int64_t timestamp)
{
	char line[160];

	snprintf(line, sizeof(line),
	    "{\"version\": 2, \"width\": %u, \"height\": %u, \"timestamp\": "
	    "%" PRId64 ", \"env\": {\"TERM\": \"xterm-256color\"}}\n",
	    cols, rows, timestamp);
	return (buf_adds(out, line));
}

/* `[t, "code", "` */
static int
cast_open(struct buf *out, uint64_t t_us, char code)
{
	char head[48];

	snprintf(head, sizeof(head), "[%" PRIu64 ".%06" PRIu64 ", \"%c\", \"",
	    t_us / 1000000, t_us % 1000000, code);
	return (buf_adds(out, head));
}

static int
cast_close(struct buf *out)
{
	buf_adds(out, "\"]\n");
	return (out->failed ? -1 : 0);
}

int
cast_output(struct cast *c, struct buf *out, uint64_t t_us, const uint8_t *p,
    size_t n)
{
	buf_reset(&c->text);
	if (utf8_sanitise(&c->u8, p, n, &c->text) == -1)
		return (-1);
	if (c->text.len == 0)
		return (0); /* all held back: a lone lead byte */
	if (cast_open(out, t_us, 'o') == -1 ||
	    json_escape(out, c->text.p, c->text.len) == -1)
		return (-1);
	return (cast_close(out));
}

int
cast_finish(struct cast *c, struct buf *out, uint64_t t_us)
{
	if (utf8_held(&c->u8) == 0)
		return (0);
	buf_reset(&c->text);
	if (utf8_flush(&c->u8, &c->text) == -1 ||
	    cast_open(out, t_us, 'o') == -1 ||
	    json_escape(out, c->text.p, c->text.len) == -1)
		return (-1);
	return (cast_close(out));
}

int
cast_resize(struct buf *out, uint64_t t_us, unsigned int cols,
    unsigned int rows)
{
	char size[32];

	snprintf(size, sizeof(size), "%ux%u", cols, rows);
	if (cast_open(out, t_us, 'r') == -1 || buf_adds(out, size) == -1)
		return (-1);
	return (cast_close(out));
}

int
cast_input(struct buf *out, uint64_t t_us, const uint8_t *p, size_t n)
{
	struct cast c;
	int	    rv = -1;

	cast_init(&c);
	if (utf8_sanitise(&c.u8, p, n, &c.text) == 0 &&
	    utf8_flush(&c.u8, &c.text) == 0 && cast_open(out, t_us, 'i') == 0 &&
	    json_escape(out, c.text.p, c.text.len) == 0)
		rv = cast_close(out);
	cast_free(&c);
	return (rv);
}

int
cast_cut(struct buf *out, uint64_t t_us, const char *reason)
{
	if (cast_open(out, t_us, 'm') == -1 || buf_adds(out, "cut: ") == -1 ||
	    json_escape(out, reason, strlen(reason)) == -1)
		return (-1);
	return (cast_close(out));
}
