//! CRC-32C (Castagnoli): the checksum of a serialised prefix state.
//!
//! Polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value and final XOR 0xFFFFFFFF,
//! input and output reflected — the parameters of iSCSI (RFC 3720, appendix B.4) and of
//! the "CRC-32C" entry of the CRC catalogues, whose check value (the CRC of the nine
//! ASCII bytes `123456789`) is 0xE3069283. A CRC of this width detects every single-bit
//! error, every odd number of flipped bits and every error burst of up to 32 bits, which a
//! general-purpose hash of the same width does not promise.

/// The byte-at-a-time table of the reflected polynomial, built at compile time.
const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The CRC-32C of `bytes`.
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::crc32c;

    #[test]
    fn published_check_values() {
        // The catalogue's check value, and the test vectors of RFC 3720 (B.4): 32 zero
        // bytes, 32 bytes of 0xFF, and the bytes 0x00..0x1F ascending.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn every_single_bit_flip_changes_the_crc() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        let base = crc32c(&data);
        for byte in 0..data.len() {
            for bit in 0..8 {
                let mut flipped = data.clone();
                flipped[byte] ^= 1 << bit;
                assert_ne!(crc32c(&flipped), base, "byte {byte} bit {bit}");
            }
        }
    }
}
