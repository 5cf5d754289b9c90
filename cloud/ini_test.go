package cloud

import (
	"maps"
	"strings"
	"testing"
)

func TestParseINI(t *testing.T) {
	in := strings.Join([]string{
		"orphan = ignored",
		"# comment",
		"  ; indented comment",
		"[default]",
		"Region = us-east-1 ; trailing comment",
		"aws_access_key_id: AKID",
		`aws_secret_access_key = "quoted#secret"`,
		"[ profile   prod ]  # comment",
		"region=eu-west-1\r",
		"s3 =",
		"  max_concurrent_requests = 10",
		"note = first",
		"  second line",
		"  promoted = yes ; comment",
		"[profile prod]",
		"role_arn = arn:aws:iam::1:role/r",
		"[empty]",
	}, "\n")
	want := iniSections{
		"default": {"region": "us-east-1", "aws_access_key_id": "AKID", "aws_secret_access_key": "quoted#secret"},
		"profile prod": {"region": "eu-west-1", "s3": "", "note": "first\nsecond line", "promoted": "yes",
			"role_arn": "arn:aws:iam::1:role/r"},
		"empty": {},
	}
	got := parseINI(in)
	if len(got) != len(want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
	for name, w := range want {
		if !maps.Equal(got[name], w) {
			t.Errorf("[%s] = %q, want %q", name, got[name], w)
		}
	}
}

// FuzzParseINI: the parser never panics, keys come out lower-case and
// trimmed, and re-parsing a file made of its own output gives it back.
func FuzzParseINI(f *testing.F) {
	for _, s := range []string{"", "[default]\nregion = x\n", "[profile a b]\nk: 'v'\n  sub = 1\n  cont\n",
		"[", "[]", "k=v\n[s]\n =\n\t=\n", "[s]\nk = \"\n[s] ; c\nk2 = v # c\n", "[s]\nk =\n  a = b\n  c\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		sections := parseINI(data)
		for name, kv := range sections {
			for k, v := range kv {
				if k != strings.ToLower(k) || k != strings.TrimSpace(k) {
					t.Fatalf("[%s] key %q not lower-case and trimmed", name, k)
				}
				if !roundTrips(name, k, v) {
					continue
				}
				again := parseINI("[" + name + "]\n" + k + " = " + v + "\n")
				if got := again[name][k]; got != v {
					t.Fatalf("[%s] %s = %q re-parsed as %q", name, k, v, got)
				}
			}
		}
	})
}

// roundTrips says whether a section, key and value can be written back as
// one plain line each (no newline, comment or separator characters that
// would change their meaning).
func roundTrips(name, k, v string) bool {
	plain := func(s string) bool {
		return s == strings.TrimSpace(s) && !strings.ContainsAny(s, "\n\r#;[]=:'\"") && s != ""
	}
	return plain(name) && plain(k) && plain(v) && strings.Count(name, " ") <= 1 && !strings.Contains(name, "\t")
}
