package ledger

import (
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/value"
)

// FuzzCheckReference: checkReference never panics; a problem names one of
// AddReference's arguments with a code of the list; what it accepts is a
// text of 1 to MaxReferenceLen characters without white space at either
// end, and a source and source id of the text rule.
func FuzzCheckReference(f *testing.F) {
	f.Add("DRAFTTX1", SourceReminder, "d_abc")
	f.Add("", "", "")
	f.Add(" X", "reminder", "d_1\n")
	f.Add("ÁÉÍÓÚáéíóúÁÉÍÓÚáéíóúÁÉÍÓÚáéíóúÁÉÍÓÚ", "reminder", "d_1")
	f.Add("X\u202e", "\u00a0", "d")
	f.Fuzz(func(t *testing.T, ref, source, sourceID string) {
		fe := checkReference(ref, source, sourceID)
		if fe != nil {
			codes := []string{CodeInvalidText, CodeInvalidFormat, CodeMissing}
			if !slices.Contains([]string{"reference", "source", "sourceId"}, fe.Field) || !slices.Contains(codes, fe.Code) || fe.Message == "" {
				t.Fatalf("checkReference(%q, %q, %q) = %+v", ref, source, sourceID, fe)
			}
			return
		}
		first, _ := utf8.DecodeRuneInString(ref)
		last, _ := utf8.DecodeLastRuneInString(ref)
		if ref == "" || utf8.RuneCountInString(ref) > MaxReferenceLen || value.TextProblem(ref) != "" || unicode.IsSpace(first) || unicode.IsSpace(last) ||
			value.TextProblem(source) != "" || value.TextProblem(sourceID) != "" {
			t.Fatalf("checkReference(%q, %q, %q) accepted", ref, source, sourceID)
		}
	})
}
