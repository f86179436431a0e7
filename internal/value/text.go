package value

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTextLen bounds an id, a name or any other text a person may have to
// read, in characters (runes), not bytes. A company's legal name (razão
// social) runs to 150 characters in the CNPJ register.
const MaxTextLen = 255

// refusedInText holds the characters refused anywhere in an id or name,
// because a person cannot see them or they change how their neighbours
// display, so two ids or names that differ only by them look alike:
//
//   - the control characters (Unicode Cc) and the line and paragraph
//     separators (Zl, Zp);
//   - every format character (Cf): zero-width characters, the
//     bidirectional controls and marks (all of Bidi_Control), invisible
//     operators (U+2061-U+2064), the interlinear annotation characters
//     (U+FFF9-U+FFFB), tag characters (which can hide instructions from a
//     person while a model still reads them), Egyptian hieroglyph format
//     controls, and the prepended concatenation marks (U+0600-U+0605,
//     U+06DD, U+070F, U+0890-U+0891, U+08E2, U+110BD, U+110CD): these do
//     show, but as a sign spread over or around the digits that follow, so
//     they change how the neighbours display, and no id or name of a
//     portfolio needs one;
//   - the rest of Unicode's Default_Ignorable_Code_Point, that is
//     Other_Default_Ignorable_Code_Point (the Hangul fillers, the combining
//     grapheme joiner, unassigned code points reserved as ignorable) and
//     Variation_Selector (which, like the zero width joiner, make emoji
//     sequences, so those are refused).
//
// A test derives the set from the unicode package's tables, for every code
// point.
var refusedInText = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0000, Hi: 0x001f, Stride: 1}, // C0 controls
		{Lo: 0x007f, Hi: 0x009f, Stride: 1}, // DEL, C1 controls
		{Lo: 0x00ad, Hi: 0x00ad, Stride: 1}, // soft hyphen
		{Lo: 0x034f, Hi: 0x034f, Stride: 1}, // combining grapheme joiner
		{Lo: 0x0600, Hi: 0x0605, Stride: 1}, // Arabic number signs (prepended)
		{Lo: 0x061c, Hi: 0x061c, Stride: 1}, // ALM
		{Lo: 0x06dd, Hi: 0x06dd, Stride: 1}, // Arabic end of ayah (prepended)
		{Lo: 0x070f, Hi: 0x070f, Stride: 1}, // Syriac abbreviation mark (prepended)
		{Lo: 0x0890, Hi: 0x0891, Stride: 1}, // Arabic pound and piastre marks above (prepended)
		{Lo: 0x08e2, Hi: 0x08e2, Stride: 1}, // Arabic disputed end of ayah (prepended)
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // Hangul choseong and jungseong fillers
		{Lo: 0x17b4, Hi: 0x17b5, Stride: 1}, // Khmer inherent vowels
		{Lo: 0x180b, Hi: 0x180f, Stride: 1}, // Mongolian variation selectors, vowel separator
		{Lo: 0x200b, Hi: 0x200f, Stride: 1}, // zero width space, non-joiner, joiner; LRM, RLM
		{Lo: 0x2028, Hi: 0x202e, Stride: 1}, // line and paragraph separators; LRE, RLE, PDF, LRO, RLO
		{Lo: 0x2060, Hi: 0x206f, Stride: 1}, // word joiner, invisible operators; LRI, RLI, FSI, PDI; deprecated format characters
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // Hangul filler
		{Lo: 0xfe00, Hi: 0xfe0f, Stride: 1}, // variation selectors
		{Lo: 0xfeff, Hi: 0xfeff, Stride: 1}, // zero width no-break space (BOM)
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // halfwidth Hangul filler
		{Lo: 0xfff0, Hi: 0xfffb, Stride: 1}, // reserved ignorable; interlinear annotation
	},
	R32: []unicode.Range32{
		{Lo: 0x110bd, Hi: 0x110bd, Stride: 1}, // Kaithi number sign (prepended)
		{Lo: 0x110cd, Hi: 0x110cd, Stride: 1}, // Kaithi number sign above (prepended)
		{Lo: 0x13430, Hi: 0x1343f, Stride: 1}, // Egyptian hieroglyph format controls
		{Lo: 0x1bca0, Hi: 0x1bca3, Stride: 1}, // shorthand format controls
		{Lo: 0x1d173, Hi: 0x1d17a, Stride: 1}, // musical symbol format controls
		{Lo: 0xe0000, Hi: 0xe0fff, Stride: 1}, // tags, variation selectors supplement, reserved ignorable
	},
	LatinOffset: 3,
}

// invisibleInText holds the characters, refused ones aside, that a
// schema pattern can list and that do not make an id or name visible:
// white space (Unicode White_Space), private use (Co), and the letters and
// symbols that look blank (the Hangul fillers U+115F, U+1160, U+3164,
// U+FFA0, which are refused too, the braille pattern blank U+2800 and the
// musical symbol null notehead U+1D159). Combining marks (M) and unassigned
// code points (Cn) do not make text visible either; see [VisibleInText].
var invisibleInText = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0009, Hi: 0x000d, Stride: 1}, // white space
		{Lo: 0x0020, Hi: 0x0020, Stride: 1},
		{Lo: 0x0085, Hi: 0x0085, Stride: 1},
		{Lo: 0x00a0, Hi: 0x00a0, Stride: 1},
		{Lo: 0x115f, Hi: 0x1160, Stride: 1}, // Hangul choseong and jungseong fillers
		{Lo: 0x1680, Hi: 0x1680, Stride: 1}, // white space
		{Lo: 0x2000, Hi: 0x200a, Stride: 1},
		{Lo: 0x2028, Hi: 0x2029, Stride: 1},
		{Lo: 0x202f, Hi: 0x202f, Stride: 1},
		{Lo: 0x205f, Hi: 0x205f, Stride: 1},
		{Lo: 0x2800, Hi: 0x2800, Stride: 1}, // braille pattern blank
		{Lo: 0x3000, Hi: 0x3000, Stride: 1}, // white space
		{Lo: 0x3164, Hi: 0x3164, Stride: 1}, // Hangul filler
		{Lo: 0xe000, Hi: 0xf8ff, Stride: 1}, // private use
		{Lo: 0xffa0, Hi: 0xffa0, Stride: 1}, // halfwidth Hangul filler
	},
	R32: []unicode.Range32{
		{Lo: 0x1d159, Hi: 0x1d159, Stride: 1},   // musical symbol null notehead
		{Lo: 0xf0000, Hi: 0xffffd, Stride: 1},   // private use
		{Lo: 0x100000, Hi: 0x10fffd, Stride: 1}, // private use
	},
	LatinOffset: 4,
}

// RefusedInText returns the characters [TextProblem] refuses anywhere in an
// id or name, for an input schema to say the same. The
// table must not be modified.
func RefusedInText() *unicode.RangeTable { return refusedInText }

// InvisibleInText returns the characters other than combining marks and
// unassigned code points that do not make an id or name visible (see
// [VisibleInText]), for the input schema to say what a pattern can. The
// table must not be modified.
func InvisibleInText() *unicode.RangeTable { return invisibleInText }

// VisibleInText reports whether r makes an id or name visible: [TextProblem]
// refuses one without such a character, so one empty once
// white space is trimmed, or invisible. A visible character is a letter,
// number, punctuation or symbol (Unicode L, N, P, S) that does not look
// blank; combining marks alone, private use and unassigned code points do
// not count.
func VisibleInText(r rune) bool {
	return unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && !unicode.Is(invisibleInText, r)
}

// softHyphen is the one character of refusedInText between the C1 controls
// and firstRefusedAbove.
const softHyphen = 0x00ad

// firstRefusedAbove is the first character of refusedInText above the soft
// hyphen (the combining grapheme joiner): a letter before it, as every
// accented Latin letter is, needs no table look-up.
const firstRefusedAbove = 0x034f

// The messages of TextProblem that do not vary.
const (
	msgEmpty   = "must not be empty"
	msgBlank   = "must not be blank: it has only white space or invisible characters"
	msgControl = "must not contain control characters"
	msgUTF8    = "must be valid UTF-8"
	// msgRefused follows "must not contain U+XXXX".
	msgRefused = ", an invisible or formatting character that can hide or reorder text (zero-width, default-ignorable, format or bidirectional control, variation selector, tag, line or paragraph separator)"
)

// TextProblem returns why s is not acceptable as an id or name, or "" when
// it is: the rule for every text a person may have to read (the portfolio's
// ids and names, customers' names, notes, reasons, idempotency keys, file
// names), which tools answer with the code invalid_text. The message never
// holds s.
func TextProblem(s string) string {
	if s == "" {
		return msgEmpty
	}
	// Fast path: printable ASCII, one byte a character, as nearly every id
	// and name is; eight bytes at a time, the last word overlapping the
	// one before. The bytes before i are printable ASCII.
	i := 0
	if len(s) >= 8 {
		for ; i+8 < len(s); i += 8 {
			if !printableASCII8(load64(s[i:])) {
				break
			}
		}
		if i+8 >= len(s) && printableASCII8(load64(s[len(s)-8:])) {
			i = len(s)
		}
	}
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		if len(s) > MaxTextLen {
			return tooLong()
		}
		if s[0] == ' ' && strings.TrimLeft(s, " ") == "" {
			return msgBlank
		}
		return ""
	}
	// Printable ASCII other than the space is visible.
	visible := strings.TrimLeft(s[:i], " ") != ""
	n := i
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return msgControl
			}
			visible = visible || c != ' '
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return msgUTF8
			}
			if r <= 0x9f { // C1 controls U+0080..U+009F
				return msgControl
			}
			if r == softHyphen || r >= firstRefusedAbove && unicode.Is(refusedInText, r) {
				return "must not contain " + codePoint(r) + msgRefused
			}
			visible = visible || VisibleInText(r)
			i += size
			// Past an accented letter, a name goes on in plain ASCII, as
			// a rule: by words again.
			for i+8 <= len(s) {
				w := load64(s[i:])
				if !printableASCII8(w) {
					break
				}
				visible = visible || w != ' '*lsb
				i += 8
				n += 8
			}
		}
		n++
	}
	if n > MaxTextLen {
		return tooLong()
	}
	if !visible {
		return msgBlank
	}
	return ""
}

// codePoint writes r as U+XXXX.
func codePoint(r rune) string {
	h := strings.ToUpper(strconv.FormatInt(int64(r), 16))
	return "U+" + strings.Repeat("0", max(0, 4-len(h))) + h
}

func tooLong() string {
	return "must be at most " + strconv.Itoa(MaxTextLen) + " characters"
}
