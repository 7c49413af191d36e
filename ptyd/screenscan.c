/*
 * screenscan.c -- the mode scanner: every byte of output as it enters the
 * ring (screen_scan_output), cheap since it skips to each ESC.
 *
 * Owns: the modes libvterm does not tell (application cursor keys and
 * keypad, focus events, mouse tracking and encoding, bracketed paste, the
 * scroll region) and the last changes, by ring position, of those it
 * keeps (the alternate screen, the cursor's visibility), so that an
 * emulator rebuilt from the middle of the ring starts from them
 * (screen_scan_prime).  Does not own: the emulator (screen.c) or the
 * redraw that writes the modes out (screenredraw.c).
 */
#include <stdint.h>
#include <string.h>

#include "screen.h"
#include "screen_int.h"
#include "vtfeed.h"

static void
mode_hist_set(struct mode_hist *h, int val, uint64_t at)
{
	if ((uint8_t)val == h->cur)
		return;
	h->cur = (uint8_t)val;
	if (h->n == MODE_HIST) {
		memmove(h->at, h->at + 1, sizeof(h->at[0]) * (MODE_HIST - 1));
		memmove(h->val, h->val + 1, MODE_HIST - 1);
		h->n--;
	}
	h->at[h->n] = at;
	h->val[h->n] = (uint8_t)val;
	h->n++;
}

/* Its value where the byte at pos is about to be read.  Every change kept
 * is a real one, so before the oldest kept the value was the other one. */
static int
mode_hist_at(const struct mode_hist *h, uint64_t pos)
{
	int i;

	for (i = h->n - 1; i >= 0; i--)
		if (h->at[i] <= pos)
			return (h->val[i]);
	return (h->n > 0 ? !h->val[0] : h->cur);
}

static void
screen_modes_reset(struct screen *s)
{
	s->modes = 0;
	s->mouse = 0;
	s->top = s->bottom = 0;
	mode_hist_set(&s->alt_hist, 0, s->scan_at);
	mode_hist_set(&s->cursor_hist, 1, s->scan_at);
}

static unsigned int
screen_mode_bit(int n)
{
	switch (n) {
	case 1:
		return (SCREEN_M_CKM);
	case 1004:
		return (SCREEN_M_FOCUS);
	case 1005:
		return (SCREEN_M_UTF8MS);
	case 1006:
		return (SCREEN_M_SGRMS);
	case 1015:
		return (SCREEN_M_URXVTMS);
	case 2004:
		return (SCREEN_M_PASTE);
	}
	return (0);
}

/* CSI ? Pm h/l. */
static void
screen_decset(struct screen *s, int set)
{
	int i, n;

	for (i = 0; i < s->sc.np; i++) {
		n = s->sc.param[i];
		if (n == 9 || n == 1000 || n == 1002 || n == 1003)
			s->mouse = set ? n : 0;
		else if (n == 1047 || n == 1049) /* libvterm has no 47 */
			mode_hist_set(&s->alt_hist, set, s->scan_at);
		else if (n == 25)
			mode_hist_set(&s->cursor_hist, set, s->scan_at);
		else if (set)
			s->modes |= screen_mode_bit(n);
		else
			s->modes &= ~screen_mode_bit(n);
	}
}

/* A whole CSI sequence. */
static void
screen_csi(struct screen *s, int final)
{
	struct scan *sc = &s->sc;

	if (sc->priv == '?' && sc->inter == 0 && (final == 'h' || final == 'l'))
		screen_decset(s, final == 'h');
	else if (sc->priv == 0 && sc->inter == 0 && final == 'r') {
		s->top = sc->np > 0 ? sc->param[0] : 0;
		s->bottom = sc->np > 1 ? sc->param[1] : 0;
		if (s->top <= 1 &&
		    (s->bottom == 0 || s->bottom >= (int)s->rows))
			s->top = s->bottom = 0;
	} else if (sc->priv == 0 && sc->inter == '!' && final == 'p') {
		/* DECSTR */
		s->modes &= ~(SCREEN_M_CKM | SCREEN_M_KEYPAD);
		s->top = s->bottom = 0;
		mode_hist_set(&s->cursor_hist, 1, s->scan_at);
	}
}

static void
screen_scan_param(struct scan *sc, int c)
{
	if (sc->np == 0)
		sc->np = 1;
	if (c == ';' || c == ':') {
		if (sc->np < SCAN_NPARAM)
			sc->param[sc->np++] = 0;
		return;
	}
	if (sc->param[sc->np - 1] < 100000)
		sc->param[sc->np - 1] = sc->param[sc->np - 1] * 10 + (c - '0');
}

/* One byte. */
static void
screen_scan(struct screen *s, uint8_t c)
{
	struct scan *sc = &s->sc;

	if (c == 0x1b) {
		sc->state = SCAN_ESC;
		return;
	}
	if (c == 0x18 || c == 0x1a) { /* CAN, SUB */
		sc->state = SCAN_GROUND;
		return;
	}
	switch (sc->state) {
	case SCAN_GROUND:
		return;
	case SCAN_ESC:
		sc->state = SCAN_GROUND;
		if (c == '[') {
			memset(sc->param, 0, sizeof(sc->param));
			sc->np = sc->priv = sc->inter = 0;
			sc->state = SCAN_CSI;
		} else if (c == 'c')
			screen_modes_reset(s);
		else if (c == '=')
			s->modes |= SCREEN_M_KEYPAD;
		else if (c == '>')
			s->modes &= ~SCREEN_M_KEYPAD;
		return;
	case SCAN_CSI:
		if (c >= '0' && c <= ';')
			screen_scan_param(sc, c);
		else if (c >= '<' && c <= '?' && sc->np == 0 && sc->priv == 0)
			sc->priv = c;
		else if (c >= 0x20 && c <= 0x2f)
			sc->inter = c;
		else if (c >= 0x40 && c <= 0x7e) {
			sc->state = SCAN_GROUND;
			screen_csi(s, c);
		}
		return;
	}
}

void
screen_scan_output(struct screen *s, uint64_t pos, const uint8_t *p, size_t n)
{
	const uint8_t *q = p, *e = p + n;

	screen_changed(s);
	/* Only escape sequences interest the scanner: skip to them. */
	while (q < e) {
		if (s->sc.state == SCAN_GROUND &&
		    (q = memchr(q, 0x1b, (size_t)(e - q))) == NULL)
			break;
		s->scan_at = pos + (uint64_t)(q - p) + 1;
		screen_scan(s, *q++);
	}
	s->scan_end = pos + n;
}

/*
 * A new emulator about to be fed from pos on: the alternate screen and a
 * hidden cursor as they were there.  Without it, a full-screen program
 * that came up before pos would be drawn on the normal screen (and left
 * there when it ends, its last screen in place of the shell's), with the
 * cursor showing.  What the normal screen held then is not known: the
 * alternate one comes up over a blank one.
 */
void
screen_scan_prime(struct screen *s, uint64_t pos)
{
	if (mode_hist_at(&s->alt_hist, pos))
		vtfeed_write(&s->vf, s->vt, (const uint8_t *)"\033[?1049h", 8);
	if (!mode_hist_at(&s->cursor_hist, pos))
		vtfeed_write(&s->vf, s->vt, (const uint8_t *)"\033[?25l", 6);
}
