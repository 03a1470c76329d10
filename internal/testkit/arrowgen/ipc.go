package arrowgen

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"
)

// IPCFrame finishes a flatbuffer Message (MetadataVersion V5) whose
// header, of headerType, is already built in b, and frames it with a
// zero body of bodyLen bytes as an encapsulated Arrow IPC message: what
// hostile-input tests forge field by field.
func IPCFrame(b *flatbuffers.Builder, headerType byte, header flatbuffers.UOffsetT, bodyLen int64) []byte {
	b.StartObject(5)
	b.PrependInt16Slot(0, 4, 0) // MetadataVersion V5
	b.PrependByteSlot(1, headerType, 0)
	b.PrependUOffsetTSlot(2, header, 0)
	b.PrependInt64Slot(3, bodyLen, 0)
	b.Finish(b.EndObject())
	meta := b.FinishedBytes()
	for len(meta)%8 != 0 {
		meta = append(meta, 0)
	}
	out := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(meta)))
	out = append(out, meta...)
	return append(out, make([]byte, bodyLen)...)
}
