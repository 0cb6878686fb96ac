package coreutils

// md5sum and sha256sum.

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"syscall"
)

func init() {
	register("md5sum", func(ctx context.Context, e *Env, args []string) int {
		return txtDigest(ctx, e, args, "md5sum", "MD5", md5.New)
	})
	register("sha256sum", func(ctx context.Context, e *Env, args []string) int {
		return txtDigest(ctx, e, args, "sha256sum", "SHA256", sha256.New)
	})
}

var txtSumSpec = optSpec{
	short: "bctwz",
	long: map[string]bool{
		"binary": false, "check": false, "ignore-missing": false, "quiet": false,
		"status": false, "strict": false, "tag": false, "text": false, "warn": false, "zero": false,
	},
	alias: map[string]string{"binary": "b", "check": "c", "text": "t", "warn": "w", "zero": "z"},
}

// txtSumEscape escapes a file name for a checksum line: it tells
// whether the line needs the leading backslash.
func txtSumEscape(name string) (string, bool) {
	if !strings.ContainsAny(name, "\\\n") {
		return name, false
	}
	r := strings.NewReplacer("\\", "\\\\", "\n", "\\n")
	return r.Replace(name), true
}

// txtSumUnescape undoes txtSumEscape; ok is false on a bad escape.
func txtSumUnescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		default:
			return "", false
		}
	}
	return b.String(), true
}

func txtDigest(ctx context.Context, e *Env, args []string, name, algo string, newHash func() hash.Hash) int {
	opts, operands, code, ok := txtParse(e, name, &txtSumSpec, args, 1)
	if !ok {
		return code
	}
	binary := -1
	var check, ignoreMissing, quiet, status, strict, tag, warn, zero bool
	for _, o := range opts {
		switch o.name {
		case "b":
			binary = 1
		case "t":
			binary = 0
		case "c":
			check = true
		case "ignore-missing":
			ignoreMissing = true
		case "quiet":
			quiet = true
		case "status":
			status = true
		case "strict":
			strict = true
		case "tag":
			tag = true
		case "w":
			warn = true
		case "z":
			zero = true
		}
	}
	usage := func(msg string) int { return badUsage(e, name, errors.New(msg), 1) }
	switch {
	case tag && check:
		return usage("the --tag option is meaningless when verifying checksums")
	case binary >= 0 && check:
		return usage("the --binary and --text options are meaningless when verifying checksums")
	case ignoreMissing && !check:
		return usage("the --ignore-missing option is meaningful only when verifying checksums")
	case status && !check:
		return usage("the --status option is meaningful only when verifying checksums")
	case warn && !check:
		return usage("the --warn option is meaningful only when verifying checksums")
	case quiet && !check:
		return usage("the --quiet option is meaningful only when verifying checksums")
	case strict && !check:
		return usage("the --strict option is meaningful only when verifying checksums")
	case tag && binary == 0:
		return usage("--tag does not support --text mode")
	}
	if len(operands) == 0 {
		operands = []string{"-"}
	}
	out := txtOut(e)
	defer out.Flush()
	sum := func(file string) (string, error) {
		r, err := txtOpen(ctx, e, file)
		if err != nil {
			return "", err
		}
		defer r.Close()
		h := newHash()
		if _, err := io.Copy(h, r); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	failed := false
	if !check {
		for _, file := range operands {
			d, err := sum(file)
			if err != nil {
				if txtIsCtxErr(err) {
					return 130
				}
				out.Flush()
				failPath(e, name, txtQuoteF(file), err, 1)
				failed = true
				continue
			}
			shown, esc := file, false
			if !zero {
				shown, esc = txtSumEscape(file)
			}
			if esc {
				out.WriteByte('\\')
			}
			if tag {
				fmt.Fprintf(out, "%s (%s) = %s", algo, shown, d)
			} else {
				mode := ' '
				if binary == 1 {
					mode = '*'
				}
				fmt.Fprintf(out, "%s %c%s", d, mode, shown)
			}
			if zero {
				out.WriteByte(0)
			} else {
				out.WriteByte('\n')
			}
		}
		if err := out.Flush(); err != nil {
			return txtWriteFail(e, name, err)
		}
		if failed {
			return 1
		}
		return 0
	}

	hexLen := newHash().Size() * 2
	for _, cf := range operands {
		r, err := txtOpen(ctx, e, cf)
		if err != nil {
			out.Flush()
			failPath(e, name, txtQuoteF(cf), err, 1)
			failed = true
			continue
		}
		cfName := cf
		if cf == "-" {
			cfName = "standard input"
		}
		br := bufio.NewReader(r)
		var misformatted, unreadable, mismatched, matched int
		properly := false
		bsdReversed := -1
		lineNo := 0
		for {
			line, rerr := br.ReadString('\n')
			if line == "" && rerr != nil {
				if rerr != io.EOF {
					out.Flush()
					failPath(e, name, txtQuoteF(cf), rerr, 1)
					failed = true
				}
				break
			}
			lineNo++
			line = strings.TrimSuffix(line, "\n")
			line = strings.TrimSuffix(line, "\r")
			if line == "" || line[0] == '#' {
				continue
			}
			digest, file, ok := txtSplitSumLine(line, algo, hexLen, &bsdReversed)
			if ok {
				if len(digest) != hexLen {
					ok = false
				} else if _, err := hex.DecodeString(digest); err != nil {
					ok = false
				}
			}
			if !ok {
				misformatted++
				if warn {
					out.Flush()
					fail(e, name, 1, "%s: %d: improperly formatted %s checksum line", txtQuoteF(cfName), lineNo, algo)
				}
				continue
			}
			properly = true
			// Check mode escapes only names with a newline.
			shown, esc := file, strings.Contains(file, "\n")
			if esc {
				shown, _ = txtSumEscape(file)
			}
			prefix := ""
			if esc {
				prefix = "\\"
			}
			d, err := sum(file)
			if err != nil {
				if txtIsCtxErr(err) {
					return 130
				}
				if ignoreMissing && errors.Is(err, syscall.ENOENT) {
					continue
				}
				unreadable++
				out.Flush()
				failPath(e, name, txtQuoteF(file), err, 1)
				if !status {
					fmt.Fprintf(out, "%s%s: FAILED open or read\n", prefix, shown)
				}
				continue
			}
			if strings.EqualFold(d, digest) {
				matched++
				if !status && !quiet {
					fmt.Fprintf(out, "%s%s: OK\n", prefix, shown)
				}
			} else {
				mismatched++
				if !status {
					fmt.Fprintf(out, "%s%s: FAILED\n", prefix, shown)
				}
			}
		}
		r.Close()
		out.Flush()
		plural := func(n int, one, many string) string {
			if n == 1 {
				return fmt.Sprintf(one, n)
			}
			return fmt.Sprintf(many, n)
		}
		if !properly {
			fail(e, name, 1, "%s: no properly formatted checksum lines found", txtQuoteF(cfName))
			failed = true
			continue
		}
		if !status {
			if misformatted > 0 {
				fail(e, name, 1, "WARNING: %s", plural(misformatted, "%d line is improperly formatted", "%d lines are improperly formatted"))
			}
			if unreadable > 0 {
				fail(e, name, 1, "WARNING: %s", plural(unreadable, "%d listed file could not be read", "%d listed files could not be read"))
			}
			if mismatched > 0 {
				fail(e, name, 1, "WARNING: %s", plural(mismatched, "%d computed checksum did NOT match", "%d computed checksums did NOT match"))
			}
			if ignoreMissing && matched == 0 {
				fail(e, name, 1, "%s: no file was verified", txtQuoteF(cfName))
			}
		}
		if !(mismatched == 0 && unreadable == 0 && (!strict || misformatted == 0) && (!ignoreMissing || matched > 0)) {
			failed = true
		}
	}
	if err := out.Flush(); err != nil {
		return txtWriteFail(e, name, err)
	}
	if failed {
		return 1
	}
	return 0
}

// txtSplitSumLine splits a checksum line as md5sum's split_3 does.
func txtSplitSumLine(s, algo string, hexLen int, bsdReversed *int) (digest, file string, ok bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	escaped := false
	if i < len(s) && s[i] == '\\' {
		i++
		escaped = true
	}
	if strings.HasPrefix(s[i:], algo) {
		j := i + len(algo)
		if j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '(' {
			rest := s[j+1:]
			k := strings.LastIndexByte(rest, ')')
			if k < 0 {
				return "", "", false
			}
			file = rest[:k]
			if escaped {
				if file, ok = txtSumUnescape(file); !ok {
					return "", "", false
				}
			}
			t := strings.TrimLeft(rest[k+1:], " \t")
			if !strings.HasPrefix(t, "=") {
				return "", "", false
			}
			return strings.TrimLeft(t[1:], " \t"), file, true
		}
		return "", "", false
	}
	extra := 0
	if i < len(s) && s[i] == '\\' {
		extra = 1
	}
	if len(s)-i < hexLen+2+extra {
		return "", "", false
	}
	digest = s[i : i+hexLen]
	i += hexLen
	if s[i] != ' ' && s[i] != '\t' {
		return "", "", false
	}
	i++
	if len(s)-i == 1 || (s[i] != ' ' && s[i] != '*') {
		if *bsdReversed == 0 {
			return "", "", false
		}
		*bsdReversed = 1
	} else if *bsdReversed != 1 {
		*bsdReversed = 0
		i++
	}
	file = s[i:]
	if escaped {
		if file, ok = txtSumUnescape(file); !ok {
			return "", "", false
		}
	}
	return digest, file, true
}
