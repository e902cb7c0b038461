//! Slice records (`marshalSlice` / `readSliceBuf`): 24 bytes each, big-endian.

use crate::DecodeError;

/// Size of one chunk: a file offset maps to chunk index `offset >> 26`.
pub const CHUNK_SIZE: u64 = 64 << 20;

/// Length of one slice record.
pub const SLICE_LEN: usize = 24;

/// One write into a chunk: which part of which slice object lands at `pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slice {
    /// Offset of this slice inside the 64 MiB chunk.
    pub pos: u32,
    /// Slice id; 0 is a hole.
    pub id: u64,
    /// Total size of the slice object.
    pub size: u32,
    /// Offset inside the slice object.
    pub off: u32,
    /// Bytes used.
    pub len: u32,
}

impl Slice {
    /// A hole: `len` zero bytes at `pos` of a chunk (`marshalSlice(pos, 0, 0, 0, len)`),
    /// what truncate and fallocate append.
    pub fn hole(pos: u32, len: u32) -> Self {
        Self {
            pos,
            id: 0,
            size: 0,
            off: 0,
            len,
        }
    }

    /// Slice object `id` of `size` bytes, all of it at `pos` of a chunk: what a write of
    /// `size` bytes records (`marshalSlice(pos, id, size, 0, size)`).
    pub fn whole(pos: u32, id: u64, size: u32) -> Self {
        Self {
            pos,
            id,
            size,
            off: 0,
            len: size,
        }
    }

    /// Encodes one record.
    pub fn encode(&self) -> [u8; SLICE_LEN] {
        let mut b = [0u8; SLICE_LEN];
        b[0..4].copy_from_slice(&self.pos.to_be_bytes());
        b[4..12].copy_from_slice(&self.id.to_be_bytes());
        b[12..16].copy_from_slice(&self.size.to_be_bytes());
        b[16..20].copy_from_slice(&self.off.to_be_bytes());
        b[20..24].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Decodes one record.
    pub fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
        DecodeError::check_len("slice", buf, SLICE_LEN)?;
        let mut r = crate::decode::Reader(buf);
        Ok(Self {
            pos: r.u32(),
            id: r.u64(),
            size: r.u32(),
            off: r.u32(),
            len: r.u32(),
        })
    }

    /// Decodes a chunk value: concatenated records (SQL and TKV layout).
    pub fn decode_all(buf: &[u8]) -> Result<Vec<Self>, DecodeError> {
        if !buf.len().is_multiple_of(SLICE_LEN) {
            return Err(DecodeError::Invalid {
                what: "chunk length",
                value: buf.len() as u64,
            });
        }
        buf.chunks_exact(SLICE_LEN).map(Self::decode).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record JuiceFS wrote for a 1000-byte write with slice id 1 (`marshalSlice`).
    #[test]
    fn golden_write_record() {
        let s = Slice {
            pos: 0,
            id: 1,
            size: 1000,
            off: 0,
            len: 1000,
        };
        let hex: String = s.encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "00000000".to_owned() + "0000000000000001" + "000003e8" + "00000000" + "000003e8"
        );
    }

    #[test]
    fn concatenated_round_trip() {
        let a = Slice {
            pos: 0,
            id: 7,
            size: 1024,
            off: 0,
            len: 1024,
        };
        let b = Slice {
            pos: 1024,
            id: 8,
            size: 1024,
            off: 16,
            len: 1000,
        };
        let mut buf = a.encode().to_vec();
        buf.extend_from_slice(&b.encode());
        assert_eq!(Slice::decode_all(&buf).unwrap(), vec![a, b]);
        assert!(Slice::decode_all(&buf[..30]).is_err());
    }
}
