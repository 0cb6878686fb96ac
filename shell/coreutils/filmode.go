package coreutils

// Symbolic and octal modes (chmod, mkdir -m), as gnulib's modechange
// parses and applies them.

const (
	filModeAll   = 0o7777 // CHMOD_MODE_BITS
	filUmask     = 0o022  // the shell's umask: the FS has none to ask
	filFlagOrd   = 0      // MODE_ORDINARY_CHANGE
	filFlagX     = 1      // MODE_X_IF_ANY_X
	filFlagCopy  = 2      // MODE_COPY_EXISTING
	filModeSUID  = 0o4000 // S_ISUID
	filModeSGID  = 0o2000 // S_ISGID
	filModeSVTX  = 0o1000 // S_ISVTX
	filModeRWXU  = 0o700
	filModeRWXG  = 0o070
	filModeRWXO  = 0o007
	filModeRead  = 0o444
	filModeWrite = 0o222
	filModeExec  = 0o111
)

// filModeChange is one operation of a mode string.
type filModeChange struct {
	op        byte // '=', '+', '-'
	flag      int
	affected  uint32
	value     uint32
	mentioned uint32
}

// filParseMode compiles a mode string; ok is false if it is invalid.
func filParseMode(s string) ([]filModeChange, bool) {
	if s == "" {
		return nil, false
	}
	if s[0] >= '0' && s[0] <= '7' {
		var m uint32
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '7' {
				break
			}
			m = m*8 + uint32(c-'0')
			if m > filModeAll {
				return nil, false
			}
		}
		if i == len(s) {
			mentioned := uint32(filModeAll)
			if i < 5 {
				mentioned = m&(filModeSUID|filModeSGID) | filModeSVTX | 0o777
			}
			return []filModeChange{{op: '=', flag: filFlagOrd, affected: mentioned, value: m, mentioned: mentioned}}, true
		}
		// Octal digits mixed with other text is invalid.
		return nil, false
	}
	var out []filModeChange
	p := 0
	for {
		var affected uint32
	who:
		for ; p < len(s); p++ {
			switch s[p] {
			case 'u':
				affected |= filModeSUID | filModeRWXU
			case 'g':
				affected |= filModeSGID | filModeRWXG
			case 'o':
				affected |= filModeSVTX | filModeRWXO
			case 'a':
				affected |= filModeAll
			default:
				break who
			}
		}
		if p >= len(s) || (s[p] != '=' && s[p] != '+' && s[p] != '-') {
			return nil, false
		}
		for p < len(s) && (s[p] == '=' || s[p] == '+' || s[p] == '-') {
			op := s[p]
			p++
			var value, mentioned uint32
			flag := filFlagCopy
			switch {
			case p < len(s) && s[p] >= '0' && s[p] <= '7':
				var m uint32
				for p < len(s) && s[p] >= '0' && s[p] <= '7' {
					m = m*8 + uint32(s[p]-'0')
					p++
					if m > filModeAll {
						return nil, false
					}
				}
				if affected != 0 || (p < len(s) && s[p] != ',') {
					return nil, false
				}
				affected, mentioned = filModeAll, filModeAll
				value = m
				flag = filFlagOrd
			case p < len(s) && s[p] == 'u':
				value = filModeRWXU
				p++
			case p < len(s) && s[p] == 'g':
				value = filModeRWXG
				p++
			case p < len(s) && s[p] == 'o':
				value = filModeRWXO
				p++
			default:
				flag = filFlagOrd
			perms:
				for ; p < len(s); p++ {
					switch s[p] {
					case 'r':
						value |= filModeRead
					case 'w':
						value |= filModeWrite
					case 'x':
						value |= filModeExec
					case 'X':
						flag = filFlagX
					case 's':
						value |= filModeSUID | filModeSGID
					case 't':
						value |= filModeSVTX
					default:
						break perms
					}
				}
			}
			if mentioned == 0 {
				if affected != 0 {
					mentioned = affected & value
				} else {
					mentioned = value
				}
			}
			out = append(out, filModeChange{op: op, flag: flag, affected: affected, value: value, mentioned: mentioned})
		}
		if p == len(s) {
			return out, true
		}
		if s[p] != ',' {
			return nil, false
		}
		p++
	}
}

// filAdjustMode applies changes to old (07777 bits) as gnulib's
// mode_adjust does, and returns the new mode and the bits changed.
func filAdjustMode(old uint32, dir bool, umask uint32, changes []filModeChange) (uint32, uint32) {
	newmode := old & filModeAll
	var modeBits uint32
	for _, c := range changes {
		affected := c.affected
		var omit uint32
		if dir {
			omit = (filModeSUID | filModeSGID) &^ c.mentioned
		}
		value := c.value
		switch c.flag {
		case filFlagCopy:
			value &= newmode
			var v uint32
			if value&filModeRead != 0 {
				v |= filModeRead
			}
			if value&filModeWrite != 0 {
				v |= filModeWrite
			}
			if value&filModeExec != 0 {
				v |= filModeExec
			}
			value |= v
		case filFlagX:
			if newmode&filModeExec != 0 || dir {
				value |= filModeExec
			}
		}
		if affected != 0 {
			value &= affected &^ omit
		} else {
			value &= ^umask &^ omit
		}
		switch c.op {
		case '=':
			preserved := omit
			if affected != 0 {
				preserved |= ^affected
			}
			modeBits |= filModeAll &^ preserved
			newmode = newmode&preserved | value
		case '+':
			modeBits |= value
			newmode |= value
		case '-':
			modeBits |= value
			newmode &^= value
		}
	}
	return newmode & filModeAll, modeBits
}
