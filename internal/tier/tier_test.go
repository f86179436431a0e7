package tier

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestTiers: under -short a marked test is skipped with a message naming its tier; without
// -short it runs. Each case runs this test binary again, with and without -test.short.
func TestTiers(t *testing.T) {
	marks := map[string]func(testing.TB){"EndToEnd": EndToEnd, "Volume": Volume}
	if name := os.Getenv("TIER_CHILD"); name != "" {
		marks[name](t)
		t.Log("ran")
		return
	}
	for _, tc := range []struct {
		mark  string
		short bool
		want  string
	}{
		{"EndToEnd", true, "end-to-end: skipped under -short"},
		{"EndToEnd", false, "ran"},
		{"Volume", true, "volume: skipped under -short"},
		{"Volume", false, "ran"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestTiers$", "-test.v", "-test.count", "1", "-test.short="+strconv.FormatBool(tc.short))
		cmd.Env = append(os.Environ(), "TIER_CHILD="+tc.mark)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s, -short=%v: %v\n%s", tc.mark, tc.short, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s, -short=%v: the child wrote\n%s\nwant %q", tc.mark, tc.short, out, tc.want)
		}
	}
}
