package embedded

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

func sampleItem() store.Item {
	return store.Item{
		store.AttrPK: "p", store.AttrSK: "s",
		"str": "héllo", "empty": "", "i": int64(math.MinInt64), "f": -0.125, "big": 1e20,
		"t": true, "no": false, "raw": []byte{0, 255}, "list": []string{"b", "", "b"},
	}
}

func TestItemCodecRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleItem()
	raw, err := encodeItem(want)
	if err != nil {
		t.Fatalf("encodeItem = %v", err)
	}
	got, err := decodeItem(raw)
	if err != nil {
		t.Fatalf("decodeItem = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeItem(encodeItem(x)) = %#v; want %#v", got, want)
	}
	again, _ := encodeItem(got)
	if string(again) != string(raw) {
		t.Errorf("encoding is not stable: %x then %x", raw, again)
	}
}

func TestChangeCodecRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, want := range []store.Change{
		{Seq: formatSeq(1), Kind: store.ChangeInsert, Key: store.Key{PK: "p", SK: "s"}, New: sampleItem(), At: at},
		{Seq: formatSeq(2), Kind: store.ChangeModify, Key: store.Key{PK: "p", SK: "s"}, Old: sampleItem(), New: sampleItem(), At: at},
		{Seq: formatSeq(math.MaxUint64), Kind: store.ChangeRemove, Key: store.Key{PK: "p", SK: "s"}, Old: sampleItem(), Expired: true, At: at},
	} {
		raw, err := encodeChange(want)
		if err != nil {
			t.Fatalf("encodeChange = %v", err)
		}
		seq := uint64(1)
		switch want.Seq {
		case formatSeq(2):
			seq = 2
		case formatSeq(math.MaxUint64):
			seq = math.MaxUint64
		}
		got, err := decodeChange(seq, raw)
		if err != nil {
			t.Fatalf("decodeChange = %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeChange(encodeChange(x)) = %+v; want %+v", got, want)
		}
	}
}

// FuzzDecode feeds damaged records to the decoders: they return a value or ErrCorrupt, and never
// panic (an unreadable record must not bring the service down).
func FuzzDecode(f *testing.F) {
	item, _ := encodeItem(sampleItem())
	change, _ := encodeChange(store.Change{Kind: store.ChangeModify, Key: store.Key{PK: "p", SK: "s"}, Old: sampleItem(), New: sampleItem(), At: time.Unix(1, 0)})
	f.Add(item)
	f.Add(change)
	f.Add([]byte{})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := decodeItem(raw); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeItem error %v is not ErrCorrupt", err)
		}
		if _, err := decodeChange(7, raw); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeChange error %v is not ErrCorrupt", err)
		}
	})
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"Simple", []byte("ab"), []byte("ac")},
		{"TrailingFF", []byte{'a', 0xff}, []byte("b")},
		{"AllFF", []byte{0xff, 0xff}, nil},
		{"Empty", nil, nil},
	}
	for _, c := range cases {
		if got := prefixEnd(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: prefixEnd(%q) = %q; want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestDecodeRefusesDamage cuts and extends valid records: every damaged form is ErrCorrupt,
// never a shorter or different item.
func TestDecodeRefusesDamage(t *testing.T) {
	t.Parallel()
	item, _ := encodeItem(sampleItem())
	change, _ := encodeChange(store.Change{Kind: store.ChangeRemove, Key: store.Key{PK: "p", SK: "s"}, Old: sampleItem(), At: time.Unix(1, 0)})
	for n := range len(item) {
		if _, err := decodeItem(item[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeItem(first %d of %d bytes) = %v; want ErrCorrupt", n, len(item), err)
		}
	}
	if _, err := decodeItem(append(item[:len(item):len(item)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeItem(item + 1 byte) = %v; want ErrCorrupt", err)
	}
	for n := range len(change) {
		if _, err := decodeChange(1, change[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeChange(first %d of %d bytes) = %v; want ErrCorrupt", n, len(change), err)
		}
	}
	if _, err := decodeChange(1, append(change[:len(change):len(change)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeChange(change + 1 byte) = %v; want ErrCorrupt", err)
	}
}
