package coreutils

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The differential tests run against the host's /usr/bin/awk (mawk on
// Debian). Programs whose output mawk and POSIX/gawk disagree on are in
// TestAwkExpected instead.

func awkNeedHost(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk on this host")
	}
}

type awkCase struct {
	name  string
	stdin string
	args  []string
}

func TestAwkGNU(t *testing.T) {
	awkNeedHost(t)
	tree := makeTree(t)
	para := "p1 l1\np1 l2\n\n\n\np2 l1\n\np3\n\n"
	cases := []awkCase{
		{"print field", "", []string{"{print $2}", "a.txt"}},
		{"print NF and last", "", []string{"{print NF, $NF}", "a.txt", "csv.txt"}},
		{"pattern only", "", []string{"/alpha/", "a.txt"}},
		{"NR modulo", "", []string{"NR%2", "b.txt"}},
		{"sum END", "", []string{"{s+=$1} END{print s, NR}", "nums.txt"}},
		{"count regex", "", []string{"/e/{c++} END{print c}", "b.txt"}},
		{"F comma", "", []string{"-F,", "{print $2}", "csv.txt"}},
		{"F separate arg", "", []string{"-F", ",", "NR>1{print $1 \":\" $3}", "csv.txt"}},
		{"F regex", "", []string{"-F", "[,a]", "{print $1 \"|\" $2 \"|\" NF}", "csv.txt"}},
		{"F tab escape", "a\tb\t\tc\n", []string{"-F\\t", "{print NF, $3 \"|\" $4}"}},
		{"v assignment", "", []string{"-v", "x=hello", "-v", "n=3", "BEGIN{print x, n+1}"}},
		{"v escapes", "", []string{"-v", "x=a\\tb", "BEGIN{print x}"}},
		{"OFS rebuild", "", []string{"-v", "OFS=;", "{$1=$1}1", "csv.txt"}},
		{"stdin", "one two\nthree four\n", []string{"{print $2, $1}"}},
		{"stdin dash", "in1\nin2\n", []string{"{print FILENAME \":\" $0}", "a.txt", "-"}},
		{"FILENAME FNR NR", "", []string{"{print FILENAME, FNR, NR}", "a.txt", "csv.txt"}},
		{"two file idiom", "", []string{"NR==FNR{seen[$1]; next} $1 in seen", "dup.txt", "dup.txt"}},
		{"dedup", "", []string{"!seen[$0]++", "dup.txt"}},
		{"uniq count sorted", "", []string{"{c[$1]++} END{n=0; for(k in c) keys[++n]=k; for(i=1;i<=n;i++) for(j=i+1;j<=n;j++) if (keys[j] < keys[i]) {t=keys[i]; keys[i]=keys[j]; keys[j]=t}; for(i=1;i<=n;i++) print keys[i], c[keys[i]]}", "dup.txt"}},
		{"printf formats", "", []string{`BEGIN { printf "%5.2f|%e|%g|%x|%X|%o|%c|%%|%5s|%-5d|%+d|% d|%05d\n", 3.14159, 1234.5, 0.0001, 255, 255, 8, 65, "ab", 42, 5, 5, 42 }`}},
		{"printf star", "", []string{`BEGIN { printf "%*d|%-*d|%.*f|%.3s|%10.4s|\n", 5, 42, 4, 7, 2, 3.14159, "abcdef", "abcdef" }`}},
		{"printf per record", "", []string{`NR>1{ printf "%-6s %3d %s\n", $1, $2, toupper($3) }`, "-F,", "csv.txt"}},
		{"printf parens", "", []string{`BEGIN { printf("%s-%s\n", "a", "b") }`}},
		{"printf c of string and strnum", "65 x\n", []string{`{ printf "%c|%c|%c\n", $1, $1+1, "hello" }`}},
		{"printf e g", "", []string{`BEGIN { printf "%.3e %G %g %g %g %.10g\n", 123456, 1e-10, 100000, 1000000, 0.00001234, 1/3 }`}},
		{"split sub gsub", "", []string{`BEGIN { n = split("a:b:c", arr, ":"); print n, arr[1], arr[3]; s = "hello world"; gsub(/o/, "0", s); print s; sub(/l+/, "[&]", s); print s }`}},
		{"split default and regex", "", []string{`BEGIN { n = split("  a b  c ", arr); print n, "[" arr[1] "]", arr[3]; n = split("a1b22c", arr, /[0-9]+/); print n, arr[1] arr[2] arr[3]; print split("", arr), length(arr) }`}},
		{"split single char literal", "", []string{`BEGIN { print split("a.b.c", p, "."), p[2]; print split("a|b", q, "|"), q[2] }`}},
		{"gsub specials", "", []string{`BEGIN { s = "aaa"; print gsub(/a/, "\\&", s), s; s = "abc"; gsub(/b/, "[&]", s); print s; s = "abc"; gsub(/b/, "\\\\&", s); print s; s = "abc"; gsub("", "-", s); print s; s = "hello"; gsub(/l*/, "X", s); print s }`}},
		{"gsub on record", "", []string{`{ n = gsub(/[aeiou]/, "#"); print n, $0, NF }`, "a.txt"}},
		{"sub on field", "a b c\n", []string{`{ sub(/b/, "x y", $2); print; print NF, $2 }`}},
		{"match", "", []string{`BEGIN { print match("foobar", /o+b/), RSTART, RLENGTH; print match("foobar", "z"), RSTART, RLENGTH }`}},
		{"match extract", "", []string{`match($0, /[0-9]+/) { print substr($0, RSTART, RLENGTH) }`, "src/util.go"}},
		{"string functions", "", []string{`BEGIN { x = "abc"; print length(x), substr(x, 2), index(x, "c"), toupper(x), tolower("DEF"); print substr("hello", 2, 3), substr("hello", 4, 100), substr("hello", 10) "|" }`}},
		{"math functions", "", []string{`BEGIN { print int(3.9), int(-3.9), sqrt(16), exp(0), log(1), sin(0), cos(0), atan2(0, -1), exp(1), 2^10, 7%3, -7%3, 10/4 }`}},
		{"arithmetic precedence", "", []string{`BEGIN { print -3 % 2, 3 - -2, 1 - 1 - 1, 2 ^ 3 ^ 2, -2 ^ 2, 2 * 3 + 4, 2 + 3 * 4, (2 + 3) * 4, 2^-1 }`}},
		{"assignment operators", "", []string{`BEGIN { x = 1; x += 2; x -= 1; x *= 5; x /= 2; x %= 3; x ^= 3; print x; y = 2; print y++ + ++y, y--, --y, -y, !y; a = b = 4; print a, b }`}},
		{"number output", "", []string{`BEGIN { print 1e3, 1.5e-3, 100000, 1000000, 123456789, 0.1, 1/3, 0.1 + 0.2, -0, 3.0, 1e-7 }`}},
		{"CONVFMT OFMT", "", []string{`BEGIN { CONVFMT = "%.2f"; a = 3.14159; b = a ""; print b; OFMT = "%.3f"; print a, 17; x[a] = 1; for (k in x) print k }`}},
		{"comparisons", "", []string{`BEGIN { print 1 == 1.0, "a" < "b", 2 < 10, "2" < "10", x == 0, x == "", "abc" < "abd", "" < "a" }`}},
		{"strnum comparisons", "10 9 abc 010\n", []string{`{ print ($1 > $2), ($1 > "9"), ($3 > $1), ($1 < $4), ($4 == 10), ($4 == "10"); x = $1; y = $2; print (x > y) }`}},
		{"strnum blanks", " 10 , 9 \n", []string{"-F,", `{ print ($1 > $2), $1 + $2 }`}},
		{"numeric pattern", "", []string{`$1 > 5`, "nums.txt"}},
		{"string pattern", "", []string{`$1 > "5"`, "nums.txt"}},
		{"uninitialized", "", []string{`BEGIN { print x + 0, "[" x "]", length(x), (x == 0), (x == ""), !x }`}},
		{"string to number", "", []string{`BEGIN { a = "3x"; print a + 1, a * 2, -a, +a, "1e3" + 0, ".5" + 0, "+4" + 1, " 12 " + 0, "abc" + 0 }`}},
		{"concatenation", "", []string{`BEGIN { a = 1; b = 2; print a " " b, a b, "a" (1 + 2) "b", 1 " " 2, length("abc") length("de") }`}},
		{"arrays multidim", "", []string{`BEGIN { a[1,2] = 3; for (k in a) { split(k, p, SUBSEP); print p[1], p[2], a[k] }; if ((1,2) in a) print "yes"; if (!((2,1) in a)) print "no" }`}},
		{"delete", "", []string{`BEGIN { a["x"] = 1; a["y"] = 2; delete a["x"]; for (k in a) print k; print length(a); delete a; print length(a) }`}},
		{"in does not create", "", []string{`BEGIN { if (!(3 in a)) print "no"; if (a[3] == "") print "empty"; if (3 in a) print "now yes" }`}},
		{"reverse lines", "", []string{`{ a[NR] = $0 } END { for (i = NR; i > 0; i--) print a[i] }`, "a.txt"}},
		{"sort numbers", "", []string{`{ a[NR] = $1 } END { n = NR; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; for (i = 1; i <= n; i++) print a[i] }`, "nums.txt"}},
		{"functions recursion", "", []string{`function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) } function fib(n) { return n < 2 ? n : fib(n-1) + fib(n-2) } BEGIN { print fact(10), fib(20) }`}},
		{"functions arrays by reference", "", []string{`function fill(a, n,  i) { for (i = 1; i <= n; i++) a[i] = i * i } function sum(a,  k, s) { for (k in a) s += a[k]; return s } BEGIN { fill(sq, 5); print sum(sq), length(sq) }`}},
		{"functions scalars by value", "", []string{`function f(x) { x = 5; return x } BEGIN { y = 1; print f(y), y }`}},
		{"function newline body", "", []string{"function max(a, b)\n{\n  return a > b ? a : b\n}\n{ m = max(m, length($0)) }\nEND { print m }", "b.txt"}},
		{"getline plain", "", []string{`NR == 1 { getline; print "after", $0, NR }`, "a.txt"}},
		{"getline var", "", []string{`NR == 1 { getline x; print "x=" x, NR, $0 }`, "a.txt"}},
		{"getline file", "", []string{`BEGIN { while ((getline line < "a.txt") > 0) n++; print n; close("a.txt"); getline line < "a.txt"; print line; print (getline z < "missing.txt") }`}},
		{"getline file record", "", []string{`BEGIN { getline < "csv.txt"; print $0, NF, NR }`}},
		{"getline in BEGIN", "", []string{`BEGIN { getline; print "BEGIN got", $0, NR } { print "main", $0 }`, "a.txt"}},
		{"getline stdin dash", "in1\nin2\n", []string{`BEGIN { while ((getline l < "-") > 0) print "got " l }`}},
		{"range pattern", "", []string{`NR==2,NR==4 { print NR": "$0 }`, "b.txt"}},
		{"range regex", "", []string{`/^three/,/^six/`, "b.txt"}},
		{"range same line", "", []string{`/two/,/t/ { print "r", $0 }`, "b.txt"}},
		{"field assignment", "a b c\n", []string{`{ $2 = "X"; print; print NF; $5 = "e"; print; print NF }`}},
		{"NF assignment", "a b c d e\n", []string{`{ NF = 3; print; NF = 5; print; print NF }`}},
		{"NF increment", "a b\n", []string{`{ NF++; print NF; print $0 "|"; $(NF+2) = "z"; print; print NF }`}},
		{"swap fields", "1 2\n3 4\n", []string{`{ t = $1; $1 = $2; $2 = t; print }`}},
		{"record assignment", "", []string{`BEGIN { FS = ":" } { print $2; $0 = "x:y"; print $1, NF }`, "-"}},
		{"blank splitting", "  lead  trail  \n", []string{`{ print NF; print "[" $1 "]"; $1 = $1; print "[" $0 "]" }`}},
		{"FS empty", "abc\n", []string{`BEGIN { FS = "" } { print NF, $1, $3 }`}},
		{"FS change next record", "a:b\nc:d\n", []string{`{ FS = ":"; print $1 }`}},
		{"RS paragraph", "", []string{`BEGIN { RS = "" } { print NR ": " $0 " [" NF "]" }`, "-"}},
		{"RS char", "", []string{`BEGIN { RS = "," } { print NR ": [" $0 "]" }`, "csv.txt"}},
		{"RS regex", "", []string{`BEGIN { RS = "l[0-9]" } { print NR ": [" $0 "]" }`, "-"}},
		{"ORS OFS", "", []string{`BEGIN { OFS = "-"; ORS = "|\n" } { print $1, NR }`, "a.txt"}},
		{"noeol and empty", "", []string{`{ print NR, $0 }`, "noeol.txt", "empty.txt", "a.txt"}},
		{"crlf kept", "", []string{`{ print length($0) }`, "crlf.txt"}},
		{"control flow", "", []string{`BEGIN { while (i < 5) { i++; if (i == 2) continue; if (i == 4) break; print i } do { j++ } while (j < 3); print j; for (;;) { k++; if (k > 3) break }; print k; for (n = 0; n < 3; n++) s = s n; print s }`}},
		{"if else chains", "", []string{"{ if ($1 > 50) print $1, \"big\"\n  else if ($1 > 5) print $1, \"mid\"\n  else\n    print $1, \"small\" }", "nums.txt"}},
		{"ternary", "", []string{`{ print ($1 % 2 == 0 ? "even" : "odd") }`, "nums.txt"}},
		{"next", "", []string{`/beta/ { next } { print }`, "a.txt"}},
		{"nextfile", "", []string{`FNR == 2 { nextfile } { print FILENAME, $0 }`, "a.txt", "csv.txt"}},
		{"exit code", "", []string{`BEGIN { print 1; exit 3; print 2 } END { print "end" }`}},
		{"exit in main", "", []string{`{ print; exit } END { print "end", NR }`, "a.txt"}},
		{"exit in END", "", []string{`END { print "a"; exit 4; print "b" }`, "a.txt"}},
		{"length forms", "x\n", []string{`{ print length, length(), length($0), length(12345), length(1/4) }`}},
		{"ENVIRON", "", []string{`BEGIN { print ENVIRON["HOME"] }`}},
		{"ARGV", "", []string{`BEGIN { for (i = 0; i < ARGC; i++) print i, ARGV[i] }`, "x", "y=1", "z"}},
		{"ARGV edit", "", []string{`BEGIN { ARGV[1] = ""; ARGV[ARGC++] = "csv.txt" } { print }`, "nonexistent", "a.txt"}},
		{"command line assignment", "", []string{`{ print v, $0 }`, "v=1", "a.txt", "v=2", "nums.txt"}},
		{"command line OFS", "", []string{`{ print $1, $2 }`, "OFS=-", "csv.txt"}},
		{"double dash", "", []string{"--", "{ print }", "a.txt"}},
		{"output redirection", "", []string{`{ print > "out.txt" } END { close("out.txt"); while ((getline l < "out.txt") > 0) print "got", l }`, "a.txt"}},
		{"append redirection", "", []string{`{ print $1 >> "app.txt" } END { close("app.txt"); while ((getline l < "app.txt") > 0) print "got", l }`, "a.txt"}},
		{"redirect per key", "", []string{`NR > 1 { print $1 > ($3 ".out") }`, "-F,", "csv.txt"}},
		{"printf redirect", "", []string{`BEGIN { printf("%s\n", "x") > "p.txt"; print "y" > "p.txt"; close("p.txt"); while ((getline l < "p.txt") > 0) print l }`}},
		{"stdout special file", "", []string{`BEGIN { print "a", "b" > "/dev/stdout" }`}},
		{"regex features", "", []string{`BEGIN { print ("a+b" ~ "a\\+b"), ("aab" ~ /^a+b$/), ("x" ~ /[[:alpha:]]/), ("]" ~ /[]]/), ("a-" ~ /[a-]$/), ("tab	x" ~ /\t/), ("/" ~ /\//), ("ab" ~ /a|x/), ("" ~ //), ("a.c" ~ /a\.c/), ("abc" ~ /a\.c/) }`}},
		{"dynamic regex", "", []string{`BEGIN { re = "^[0-9]+$"; print ("123" ~ re), ("12a" ~ re), ("x.y" ~ "x\\.y"), ("xzy" ~ "x\\.y") }`}},
		{"regex bracket escapes", "", []string{`{ if ($0 ~ /[\/\]]/) print "hit", $0 }`, "-"}},
		{"not match", "", []string{`$0 !~ /a/`, "b.txt"}},
		{"regex as value", "", []string{`{ x = /alpha/; print x, !/beta/ }`, "a.txt"}},
		{"comments and continuation", "", []string{"# leading comment\n{ s = s \\\n  $1 } # trailing\nEND { print s }", "a.txt"}},
		{"semicolons newlines", "", []string{"BEGIN {\n  x = 1;\n\n  y = 2\n  print x;print y;\n};\nEND { }", "a.txt"}},
		{"in precedence", "", []string{`BEGIN { a["x"]; print "x" in a, ("y" in a) == 0, "x" "" in a }`}},
		{"print parenthesized list", "", []string{`BEGIN { print("a", "b"); print ("c")("d") }`}},
		{"printf reuse of format", "", []string{`{ printf "%s=%d;", $1, NR } END { print "" }`, "a.txt"}},
		{"print comparison in parens", "", []string{`{ print ($1 > 5), ($1 < 5) }`, "nums.txt"}},
		{"large integers", "", []string{`BEGIN { print 2^31 - 1, -2^31 + 1, 1e9 * 2, int(2147483647.5) }`}},
		{"long pipeline of fields", "", []string{`{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? OFS : ORS) }`, "a.txt", "csv.txt"}},
		{"tolower toupper fields", "", []string{`{ print toupper(substr($0, 1, 1)) tolower(substr($0, 2)) }`, "b.txt"}},
		{"index substr", "", []string{`{ i = index($0, "a"); if (i) print substr($0, i) }`, "a.txt"}},
		{"empty program file", "", []string{"", "a.txt"}},
		{"only BEGIN does not read", "never read\n", []string{`BEGIN { print "hi" }`}},
		{"only END reads", "l1\nl2\n", []string{`END { print NR, $0 }`}},
		{"f progfile", "", []string{"-f", "prog.awk", "a.txt"}},
		{"srand returns previous", "", []string{`BEGIN { srand(1); print srand(2); x = rand(); print (x >= 0 && x < 1) }`}},
		{"close unknown", "", []string{`BEGIN { print close("nothing") }`}},
	}
	// A program file for -f.
	if err := awkWriteFile(tree, "prog.awk", "BEGIN { print \"from file\" }\n{ print NR \": \" $0 }\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdin := c.stdin
			if stdin == "" && len(c.args) > 0 && c.args[len(c.args)-1] == "-" {
				stdin = para + "a:b/c\nd]e\n"
			}
			compareGNU(t, tree, stdin, append([]string{"awk"}, c.args...)...)
		})
	}
}

func awkWriteFile(dir, name, content string) error {
	var out bytes.Buffer
	e := testEnv(dir, "/", nil, &out, &out)
	w, err := e.FS.Create(context.Background(), "/"+name, false, 0o644)
	if err != nil {
		return err
	}
	io.WriteString(w, content)
	return w.Close()
}

// awkCompareErr runs a failing command both ways: the exit statuses must
// agree and both must complain on stderr (in their own words); stdout
// must agree when sameStdout.
func awkCompareErr(t *testing.T, tree, stdin string, sameStdout bool, args ...string) {
	t.Helper()
	a := runOurs(t, copyTree(t, tree), stdin, args...)
	b := runGNU(t, copyTree(t, tree), stdin, args...)
	if a.code != b.code || a.code == 0 || a.stderr == "" || b.stderr == "" ||
		!strings.HasPrefix(a.stderr, "awk: ") || sameStdout && a.stdout != b.stdout {
		t.Errorf("%q differs from the host's awk:\nours: %s\nhost: %s", args, a, b)
	}
}

func TestAwkErrors(t *testing.T) {
	awkNeedHost(t)
	tree := makeTree(t)
	cases := []struct {
		name       string
		sameStdout bool
		args       []string
	}{
		{"missing brace", true, []string{"BEGIN { print 1"}},
		{"extra brace", true, []string{"BEGIN { print 1 }}"}},
		{"bad operator", true, []string{"BEGIN { x = 1 +* 2 }"}},
		{"undefined function", true, []string{"BEGIN { f(1) }"}},
		{"unterminated string", true, []string{`BEGIN { print "abc }`}},
		{"unterminated regex", true, []string{`/abc`}},
		{"bad regex", true, []string{`BEGIN { if ("x" ~ "(") print }`}},
		{"negative field", true, []string{"{ print $(-1) }", "a.txt"}},
		{"scalar as array", true, []string{"BEGIN { x = 2; x[1] = 1 }"}},
		{"array as scalar", true, []string{"BEGIN { x[1] = 1; x = 2 }"}},
		{"missing file", false, []string{"{ print }", "nonexistent"}},
		{"missing file after others", false, []string{"{ print }", "a.txt", "nonexistent"}},
		{"printf missing args", false, []string{`BEGIN { printf "%s %s\n", 1 }`}},
		{"unknown option", true, []string{"-x", "{ print }"}},
		{"missing progfile", true, []string{"-f", "nonexistent.awk"}},
		{"next in BEGIN", true, []string{"BEGIN { next }"}},
		{"deep recursion", true, []string{"function f(n) { return f(n+1) } BEGIN { f(1) }"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			awkCompareErr(t, tree, "", c.sameStdout, append([]string{"awk"}, c.args...)...)
		})
	}
}

// TestAwkExpected covers what the host's mawk does differently from
// POSIX or gawk, and what no awk here may do (run commands).
func TestAwkExpected(t *testing.T) {
	tree := makeTree(t)
	cases := []struct {
		name, stdin string
		args        []string
		out         string
		code        int
	}{
		{"division by zero", "", []string{"BEGIN { print 1; print 1/0 }"}, "1\n", 2},
		{"modulo by zero", "", []string{"BEGIN { x = 0; print 5 % x }"}, "", 2},
		{"system", "", []string{`BEGIN { print "a"; system("ls") }`}, "a\n", 2},
		{"input pipe", "", []string{`BEGIN { "date" | getline d }`}, "", 2},
		{"output pipe", "", []string{`{ print | "sort" }`, "a.txt"}, "", 2},
		{"intervals", "", []string{`BEGIN { print ("abbc" ~ /^ab{2}c$/), ("abc" ~ /^ab{2,}c$/), ("a{1}" ~ /^a{1}$/), ("x{" ~ /x{/), ("aaa" ~ /^a{1,2}$/) }`}, "1 0 0 1 0\n", 0},
		{"utf8 characters", "", []string{`BEGIN { s = "héllo"; print length(s), substr(s, 2, 2), index(s, "l"), toupper(s); printf "%-6s|%.2s|%c\n", "é", "éa", "é"; print match(s, /l+/), RSTART, RLENGTH }`}, "5 él 3 HÉLLO\né     |éa|é\n3 3 2\n", 0},
		{"integral output", "", []string{`BEGIN { print 2^53, 2^53 - 1, -2^60, 1e15 + 0.5; printf "%d %d %i\n", 2^53, -3e10, 1e19 }`}, "9007199254740992 9007199254740991 -1152921504606846976 1e+15\n9007199254740992 -30000000000 10000000000000000000\n", 0},
		{"uninitialized field", "a\n", []string{`{ print ($3 == 0), ($3 == ""), length($3) }`}, "1 1 0\n", 0},
		{"paragraph mode newline separates", "a,b\nc,d\n\ne\n", []string{`BEGIN { RS = ""; FS = "," } { print NF ": " $1 "|" $2 "|" $3 }`}, "4: a|b|c\n1: e||\n", 0},
		{"substr POSIX positions", "", []string{`BEGIN { print substr("hello", 0, 2) "|" substr("hello", -1, 3) "|" substr("hello", 1.5) }`}, "h|h|ello\n", 0},
		{"hex is not numeric", "0x1A\n", []string{`{ print $1 + 0, ($1 == 26) }`}, "0 0\n", 0},
		{"exponent operator", "", []string{`BEGIN { x = 2; x **= 3; print 2**3, x }`}, "8 8\n", 0},
		{"word boundary", "", []string{`BEGIN { print ("foo bar" ~ /\ybar\y/), ("foobar" ~ /\ybar/), ("a b" ~ /a\sb/) }`}, "1 0 1\n", 0},
		{"for-in insertion order", "", []string{`BEGIN { a["z"]; a["b"]; a[10]; a[2]; delete a["b"]; a["b"]; for (k in a) printf "%s ", k; print "" }`}, "z 10 2 b \n", 0},
		{"uninitialized array param", "", []string{`function add(arr, k) { arr[k] = 1 } function g(a) { add(a, "x"); add(a, "y") } BEGIN { g(m); print length(m), ("x" in m) }`}, "2 1\n", 0},
		{"length of array param", "", []string{`function n(a) { return length(a) } BEGIN { x[1]; x[2]; print n(x) }`}, "2\n", 0},
		{"getline var from file keeps NR", "", []string{`{ getline l < "b.txt"; print NR, l }`, "a.txt"}, "1 one\n2 two\n3 three\n4 four\n", 0},
		{"printf percent width", "", []string{`BEGIN { printf "%5%|%d\n", 3 }`}, "%|3\n", 0},
		{"nan and inf", "", []string{`BEGIN { x = log(-1); y = -log(0); printf "%d %f %5.1f|%e\n", y, -y, y, x; print y, -y }`}, "inf -inf   inf|nan\ninf -inf\n", 0},
		{"string too long", "", []string{`BEGIN { s = "x"; while (1) s = s s }`}, "", 2},
		{"no program", "", nil, "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := runOurs(t, copyTree(t, tree), c.stdin, append([]string{"awk"}, c.args...)...)
			if got.stdout != c.out || got.code != c.code || (c.code != 0) != (got.stderr != "") {
				t.Errorf("%q:\ngot:  %s\nwant: exit %d\n--- stdout\n%s", c.args, got, c.code, c.out)
			}
		})
	}
}

// awkRunCancel runs awk with a context cancelled after a while and
// checks that it stops.
func awkRunCancel(t *testing.T, stdin io.Reader, args ...string) {
	t.Helper()
	tree := makeTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	e := testEnv(tree, "/", stdin, &out, &errb)
	done := make(chan int, 1)
	f, _ := Lookup("awk")
	go func() { done <- f(ctx, e, append([]string{"awk"}, args...)) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case code := <-done:
		t.Fatalf("%q ended before the cancellation: exit %d, %s", args, code, errb.String())
	default:
	}
	cancel()
	select {
	case code := <-done:
		if code == 0 || !strings.Contains(errb.String(), "context canceled") {
			t.Errorf("%q after cancel: exit %d, stderr %q", args, code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%q did not stop after the context was cancelled", args)
	}
}

// awkEndless is an input that never ends.
type awkEndless struct{}

func (awkEndless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "ab\n"[i%3]
	}
	return len(p) - len(p)%3, nil
}

func TestAwkCancel(t *testing.T) {
	cases := [][]string{
		{"BEGIN { while (1) x++ }"},
		{"BEGIN { for (;;) ; }"},
		{"BEGIN { do { x = x } while (1) }"},
		{"function f() { while (1) ; } BEGIN { f() }"},
		{"BEGIN { while (1) { a[1] = 1; for (k in a) y++ } }"},
		{"{ n++ }"},
		{"BEGIN { while ((getline l) > 0) n++ }"},
	}
	for _, args := range cases {
		t.Run(args[0], func(t *testing.T) { awkRunCancel(t, awkEndless{}, args...) })
	}
}
