package pix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// decoded is a BR Code as the test's own decoder reads it: a second,
// independent reading of the manual, which shares no code with the
// encoder (its CRC is table-driven, its TLV walk its own).
type decoded struct {
	Key, Amount, Name, City, TxID string
}

// decode reads a static PIX BR Code and refuses anything the manual does
// not allow: a field that overruns, ids out of order or repeated, a
// missing mandatory field, a CRC that does not verify.
func decode(s string) (decoded, error) {
	var d decoded
	if len(s) > 512 {
		return d, fmt.Errorf("%d characters: EMV allows 512", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return d, fmt.Errorf("byte %d (%#x) is not printable ASCII", i, s[i])
		}
	}
	top, err := walkTLV(s)
	if err != nil {
		return d, err
	}
	last := top[len(top)-1]
	if last.id != "63" || len(last.value) != 4 {
		return d, errors.New("the last field is not a CRC of 4 hex digits")
	}
	want, err := strconv.ParseUint(last.value, 16, 16)
	if err != nil || strings.ToUpper(last.value) != last.value {
		return d, fmt.Errorf("CRC %q is not 4 uppercase hex digits", last.value)
	}
	if got := testCRC(s[:len(s)-4]); uint64(got) != want {
		return d, fmt.Errorf("CRC %s, computed %04X", last.value, got)
	}
	f := map[string]string{}
	prev := -1
	for _, t := range top {
		n, _ := strconv.Atoi(t.id)
		if n <= prev {
			return d, fmt.Errorf("field %s after field %02d", t.id, prev)
		}
		prev = n
		f[t.id] = t.value
	}
	if top[0].id != "00" || top[0].value != "01" {
		return d, errors.New("does not start with the payload format indicator 000201")
	}
	for id, want := range map[string]string{"52": "0000", "53": "986", "58": "BR"} {
		if f[id] != want {
			return d, fmt.Errorf("field %s = %q, want %q", id, f[id], want)
		}
	}
	if _, ok := f["01"]; ok {
		return d, errors.New("a static code has no point of initiation method (01)")
	}
	acct, err := subfields(f["26"], "26")
	if err != nil {
		return d, err
	}
	if acct["00"] != "br.gov.bcb.pix" {
		return d, fmt.Errorf("merchant account GUI %q", acct["00"])
	}
	d.Key = acct["01"]
	if d.Key == "" {
		return d, errors.New("no key in field 26")
	}
	add, err := subfields(f["62"], "62")
	if err != nil {
		return d, err
	}
	d.TxID = add["05"]
	if d.TxID == "" {
		return d, errors.New("no txid (62/05)")
	}
	if a, ok := f["54"]; ok {
		whole, frac, dot := strings.Cut(a, ".")
		if !dot || len(a) > 13 || len(frac) != 2 || whole == "" || strings.Trim(whole+frac, "0123456789") != "" || whole != "0" && whole[0] == '0' || strings.Trim(whole+frac, "0") == "" {
			return d, fmt.Errorf("amount %q is not a positive 1234.56", a)
		}
		d.Amount = a
	}
	d.Name, d.City = f["59"], f["60"]
	if d.Name == "" || len(d.Name) > 25 || d.City == "" || len(d.City) > 15 {
		return d, fmt.Errorf("name %q or city %q missing or too long", d.Name, d.City)
	}
	return d, nil
}

type field struct{ id, value string }

// walkTLV splits s into id(2) length(2) value fields, to its very end.
func walkTLV(s string) ([]field, error) {
	var out []field
	for len(s) > 0 {
		if len(s) < 4 {
			return nil, fmt.Errorf("%q left over after the last field", s)
		}
		id, l := s[:2], s[2:4]
		if strings.Trim(id+l, "0123456789") != "" {
			return nil, fmt.Errorf("field header %q is not 4 digits", id+l)
		}
		n, _ := strconv.Atoi(l)
		if 4+n > len(s) {
			return nil, fmt.Errorf("field %s of %d bytes overruns the code", id, n)
		}
		out = append(out, field{id, s[4 : 4+n]})
		s = s[4+n:]
	}
	if len(out) == 0 {
		return nil, errors.New("no field")
	}
	return out, nil
}

func subfields(s, parent string) (map[string]string, error) {
	fs, err := walkTLV(s)
	if err != nil {
		return nil, fmt.Errorf("field %s: %w", parent, err)
	}
	m := map[string]string{}
	for _, f := range fs {
		if _, dup := m[f.id]; dup {
			return nil, fmt.Errorf("field %s repeats %s", parent, f.id)
		}
		m[f.id] = f.value
	}
	return m, nil
}

// testCRC is CRC-16/CCITT-FALSE by a byte table, where the package's CRC16
// shifts bit by bit.
func testCRC(s string) uint16 {
	var table [256]uint16
	for i := range table {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		table[i] = c
	}
	crc := uint16(0xFFFF)
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ table[byte(crc>>8)^s[i]]
	}
	return crc
}
