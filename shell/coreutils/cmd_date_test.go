package coreutils

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

func TestDateGNU(t *testing.T) {
	tree := makeTree(t)
	d := "2026-03-05 07:08:09.012345678"
	var cases []txtCase
	for _, f := range []string{
		"+%a|%A|%b|%B|%h|%c|%C|%d|%D|%e|%F",
		"+%g|%G|%H|%I|%j|%k|%l|%m|%M|%n|%N|%p|%P|%q|%r|%R|%s|%S|%t|%T",
		"+%u|%U|%V|%w|%W|%x|%X|%y|%Y|%z|%:z|%::z|%:::z|%Z|%%",
		"+%-d|%_d|%05d|%^a|%#a|%#Z|%^B|%10A|%-10A|%_5m|%3N|%6N|%-N|%010N|%_3H|%-j|%5Y|%-e|%0e|%^p|%#p|%Ey|%Od",
		"+%-5d|%10z|%-z|%_10:z|%^#b|%_N|%12c|%^c|%010s",
		"+plain text",
		"+%",
		"+%Q|%.|%:x",
	} {
		cases = append(cases, txtC("date", "-d", d, f))
	}
	for _, ds := range []string{
		"@0", "@1700000000.5", "@-1", "@-1.5", "2026-11-30", "2026-11-30 12:34:56",
		"2026-11-30T12:34:56Z", "2026-11-30T12:34:56+01:00", "2026-11-30 12:34:56.5",
		"Nov 30 2026", "30 Nov 2026", "November 30, 2026", "11/30/2026", "2026/11/30",
		"Mon Nov 30 12:00:00 UTC 2026", "Mon, 30 Nov 2026 12:00:00 +0000",
		"Thu, 01 Jan 1970 00:00:00 -0500", "2026-02-30", "2026-11-30 25:00",
		"2026-11-30 +1 day", "2026-01-31 +1 month", "2026-11-30 1 day ago",
		"2026-11-30 10am", "2026-11-30 10:30pm", "20261130", "2026-11-30 EST",
		"2026-11-30 12:00 UTC+3", "2026-11-30 12:00 -0500", "2026-11-30 12:00 +1 day",
		"2026-11-30 next monday", "xyz", "30-nov-2026", "nov-30-2026", "2026-11-30T12:00",
		"2026-11-30T12", "2026-11-30 12", "2026-11-30 00:00:60", "2026-11-30 24:00",
		"26-11-30", "70-1-1", "2024-02-29 +1 year", "2026-03-29 01:30 CEST",
		"1999-12-31 23:59:59 +2 seconds", "2026-11-30 12:00 pm", "2026-11-30 12am",
		"2026-11-30 0am", "2026-11-30 13pm", "2026-11-30 2026-11-29", "30 nov 10:00",
		"2026-11-30 12:00 dst", "2026-11-30 12:00 edt",
	} {
		cases = append(cases, txtC("date", "-d", ds, "+%Y-%m-%d %H:%M:%S.%N %Z %z"))
	}
	cases = append(cases,
		txtC("date", "-d", "@1772694489"),
		txtC("date", "-u", "-d", "@0"),
		txtC("date", "-d", "@0", "-R"),
		txtC("date", "-d", "@0", "--rfc-email"),
		txtC("date", "-d", d, "-I"),
		txtC("date", "-d", d, "-Ih"),
		txtC("date", "-d", d, "-Iminutes"),
		txtC("date", "-d", d, "-Iseconds"),
		txtC("date", "-d", d, "-Ins"),
		txtC("date", "-d", d, "--iso-8601"),
		txtC("date", "-d", d, "--iso=sec"),
		txtC("date", "-uIh", "-d", d),
		txtC("date", "-d", d, "-Ix"),
		txtC("date", "-d", d, "--rfc-3339=date"),
		txtC("date", "-d", d, "--rfc-3339=seconds"),
		txtC("date", "-d", d, "--rfc-3339=ns"),
		txtC("date", "-d", d, "--rfc-3339=x"),
		txtC("date", "--rfc-3339", "-d", d),
		txtC("date", "-I", "-R"),
		txtC("date", "-R", "+%s"),
		txtC("date", "-d", "@0", "+%s", "+%s"),
		txtC("date", "-d", "@0", "x"),
		txtC("date", "-d", "@0", "-r", "a.txt"),
		txtC("date", "-d"),
		txtC("date", "-x"),
		txtC("date", "-r", "b.txt"),
		txtC("date", "-r", "b.txt", "+%F %T"),
		txtC("date", "-r", "nofile"),
		txtC("date", "-u", "-r", "a.txt", "-Iseconds"),
		txtC("date", "x"),
		txtC("date", "1130"),
		txtC("date", "-f", "nofile"),
	)
	txtRun(t, tree, cases)
}

func TestDateFile(t *testing.T) {
	tree := txtTree(t, map[string]string{"dates": "@0\nxyz\n2026-01-02\n"})
	txtRun(t, tree, []txtCase{
		txtC("date", "-f", "dates"),
		txtI("@5\n@6\n", "date", "-f", "-", "+%s"),
	})
}

// TestDateTZ compares with GNU under several TZ values.
func TestDateTZ(t *testing.T) {
	tree := makeTree(t)
	for _, tz := range []string{"", "UTC", "America/New_York", "Europe/Paris", ":Europe/Paris", "Asia/Kolkata", "EST5EDT", "GMT+3", "JST-9", "<+03>-3", "UTC0", "Foo"} {
		for _, args := range [][]string{
			{"date", "-d", "@0"},
			{"date", "-d", "@1780000000", "+%c %Z %z %:z"},
			{"date", "-d", "2026-07-01 12:00", "-Iseconds"},
			{"date", "-d", "2026-01-01 12:00", "-R"},
			{"date", "-u", "-d", "@0"},
		} {
			cmd := exec.Command("date", args[1:]...)
			cmd.Env = []string{"LC_ALL=C.UTF-8", "TZ=" + tz}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			cmd.Run()
			var o, eb bytes.Buffer
			e := testEnv(tree, "/", strings.NewReader(""), &o, &eb)
			e.Vars["TZ"] = tz
			f, _ := Lookup("date")
			f(context.Background(), e, args)
			if o.String() != out.String() || eb.String() != errb.String() {
				t.Errorf("TZ=%q %q:\nours: %q %q\nGNU:  %q %q", tz, args, o.String(), eb.String(), out.String(), errb.String())
			}
		}
	}
}

func TestDateNowAndSet(t *testing.T) {
	tree := makeTree(t)
	// fixedNow is Mon Nov 30 12:00:00 UTC 2026.
	txtExpect(t, tree, "", "Mon Nov 30 12:00:00 UTC 2026\n", "", 0, "date")
	txtExpect(t, tree, "", "2026-12-01\n", "", 0, "date", "-d", "tomorrow", "+%F")
	txtExpect(t, tree, "", "2026-11-29 12:00:00\n", "", 0, "date", "-d", "yesterday", "+%F %T")
	txtExpect(t, tree, "", "2026-12-07 00:00:00\n", "", 0, "date", "-d", "next monday", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 00:00:00\n", "", 0, "date", "-d", "monday", "+%F %T")
	txtExpect(t, tree, "", "2026-12-01 00:00:00\n", "", 0, "date", "-d", "tue", "+%F %T")
	txtExpect(t, tree, "", "2026-11-23 00:00:00\n", "", 0, "date", "-d", "last monday", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 15:00:00\n", "", 0, "date", "-d", "3 hours", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 15:00:00\n", "", 0, "date", "-d", "now + 3 hours", "+%F %T")
	txtExpect(t, tree, "", "2026-11-16 12:00:00\n", "", 0, "date", "-d", "fortnight ago", "+%F %T")
	txtExpect(t, tree, "", "2026-11-29 12:00:00\n", "", 0, "date", "-d", "- 1 day", "+%F %T")
	txtExpect(t, tree, "", "2025-11-30 12:00:00\n", "", 0, "date", "-d", "last year", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 20:26:00\n", "", 0, "date", "-d", "2026", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 00:00:00\n", "", 0, "date", "-d", "", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 00:00:00\n", "", 0, "date", "-d", "utc", "+%F %T")
	txtExpect(t, tree, "", "2026-09-05 00:00:00\n", "", 0, "date", "-d", "sept 5", "+%F %T")
	txtExpect(t, tree, "", "2026-11-30 00:00:00\n", "", 0, "date", "-d", "11/30", "+%F %T")
	txtExpect(t, tree, "", "", "date: invalid date ‘1 2’\n", 1, "date", "-d", "1 2")
	txtExpect(t, tree, "", "", "date: invalid date ‘nov’\n", 1, "date", "-d", "nov")
	txtExpect(t, tree, "", "", "date: invalid date ‘+0100’\n", 1, "date", "-d", "+0100")
	// Setting the clock is refused (and never tried against GNU here).
	txtExpect(t, tree, "", "Mon Nov 30 12:34:00 UTC 2026\n", "date: cannot set date: Operation not permitted\n", 1, "date", "11301234")
	txtExpect(t, tree, "", "Thu Jan  1 00:00:05 UTC 1970\n", "date: cannot set date: Operation not permitted\n", 1, "date", "-s", "@5")
	txtExpect(t, tree, "", "", "date: invalid date ‘xyz’\n", 1, "date", "-s", "xyz")
}

// TestDateSeqFuzz compares date formats and seq with GNU on random
// input.
func TestDateSeqFuzz(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rng := rand.New(rand.NewSource(31))
	tree := makeTree(t)
	convs := "aAbBcCdDeFgGhHIjklmMnNpPqrRsStTuUVwWxXyYzZ%"
	flags := []string{"", "", "-", "_", "0", "^", "#", "^#"}
	widths := []string{"", "", "1", "3", "12"}
	for i := 0; i < 120; i++ {
		f := "+"
		for j := 0; j < 3; j++ {
			c := string(convs[rng.Intn(len(convs))])
			colons := ""
			if c == "z" {
				colons = []string{"", ":", "::", ":::"}[rng.Intn(4)]
			}
			f += "%" + flags[rng.Intn(len(flags))] + widths[rng.Intn(len(widths))] + colons + c + "|"
		}
		epoch := rng.Int63n(4000000000) - 1000000000
		compareGNU(t, tree, "", "date", "-d", fmt.Sprintf("@%d.%09d", epoch, rng.Intn(1000000000)), f)
	}
	nums := []string{"0", "1", "-1", "2.5", "0.1", "-0.25", "10", "1e1", "3.", ".5", "1e-2", "100", "0x10", "7"}
	for i := 0; i < 120; i++ {
		args := []string{"seq"}
		if rng.Intn(3) == 0 {
			args = append(args, "-w")
		}
		if rng.Intn(4) == 0 {
			args = append(args, "-f", []string{"%g", "%.3f", "%e", "%05.1f", "x%gy"}[rng.Intn(5)])
		}
		if rng.Intn(4) == 0 {
			args = append(args, "-s", ",")
		}
		n := 1 + rng.Intn(3)
		for j := 0; j < n; j++ {
			args = append(args, nums[rng.Intn(len(nums))])
		}
		compareGNU(t, tree, "", args...)
	}
}
