//! Decoding stored records: the error every decoder returns and the big-endian cursor
//! the fixed-layout records are read with.

/// Errors of decoding a stored record.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// The record is shorter than its fixed part.
    #[error("{what} record too short: {len} bytes, need {need}")]
    TooShort {
        /// Which record.
        what: &'static str,
        /// Bytes present.
        len: usize,
        /// Bytes required.
        need: usize,
    },
    /// A field holds a value JuiceFS never writes.
    #[error("invalid {what}: {value}")]
    Invalid {
        /// Which field.
        what: &'static str,
        /// The offending value.
        value: u64,
    },
}

impl DecodeError {
    /// [`DecodeError::TooShort`] when `buf` holds fewer than `need` bytes of a `what`
    /// record.
    pub(crate) fn check_len(what: &'static str, buf: &[u8], need: usize) -> Result<(), Self> {
        if buf.len() < need {
            return Err(DecodeError::TooShort {
                what,
                len: buf.len(),
                need,
            });
        }
        Ok(())
    }
}

/// Big-endian cursor for fixed-layout records.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (h, t) = self.0.split_at(N);
        self.0 = t;
        h.try_into().expect("length checked by caller")
    }
    pub(crate) fn left(&self) -> usize {
        self.0.len()
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take())
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
}
