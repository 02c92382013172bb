"""Decrypts InnoDB pages of MariaDB 10.11's data-at-rest encryption, for the tests' page
comparisons (compare_pages.py --keys). Written from the project's own notes of the format
(docs/encryption.md); plain key files only.

A tablespace's key is AES-ECB(plugin key, the IV of its crypt data on page 0); a page's IV is
LE32(space id) LE32(page no) LE64(page LSN); "aes_cbc" is CBC over whole blocks with the tail
XORed with AES-ECB(key, IV), "aes_ctr" plain CTR. full_crc32 pages: key version at 0..3, bytes
26..W-5 encrypted (W: the page, or a PAGE_COMPRESSED page's written size). Older pages: key version
at 26..29, bytes 38..P-9 encrypted.
"""
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

CRYPT_MAGIC = b"s\x0e\x0cREt"


def load_keys(path):
    keys = {}
    for line in open(path, encoding="latin1"):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        kid, rest = s.split(";", 1)
        hexkey = ""
        for ch in rest:
            if ch not in "0123456789abcdefABCDEF":
                break
            hexkey += ch
        keys[int(kid)] = bytes.fromhex(hexkey)
    return keys


def _ecb(key, block):
    e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return e.update(block) + e.finalize()


def _decrypt(mode, key, iv, data):
    if mode == "aes_ctr":
        d = Cipher(algorithms.AES(key), modes.CTR(iv)).decryptor()
        return d.update(data) + d.finalize()
    n = len(data) & ~15
    out = b""
    if n:
        d = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        out = d.update(data[:n]) + d.finalize()
    mask = _ecb(key, iv)
    return out + bytes(a ^ b for a, b in zip(data[n:], mask))


def crypt_data(page0, offset):
    """(iv, key_id) of the crypt data at `offset` of page 0, or None."""
    b = page0[offset:offset + 33]
    if b[:6] != CRYPT_MAGIC or b[7] != 16:
        return None
    return b[8:24], struct.unpack(">I", b[28:32])[0]


def crypt_offset(logical, physical):
    extent = (1 << 20) // logical if logical <= 16384 else 64
    return 38 + 150 + (24 + extent * 2 // 8) * physical // extent


def key_version(page, full_crc32):
    return struct.unpack(">I", page[0:4] if full_crc32 else page[26:30])[0]


def decrypt_page(page, space_id, cd, keys, mode, full_crc32):
    """The page with its encrypted bytes decrypted (key version and checksums left as they are)."""
    iv_crypt, key_id = cd
    key = _ecb(keys[key_id], iv_crypt)
    page = bytearray(page)
    page_no = struct.unpack(">I", page[4:8])[0]
    lsn = struct.unpack(">Q", page[16:24])[0]
    if full_crc32:
        t = struct.unpack(">H", page[24:26])[0]
        end = (t & 0xFF) << 8 if t & 0x8000 else len(page)
        iv = struct.pack("<IIQ", space_id, page_no, lsn)
        page[26:end - 4] = _decrypt(mode, key, iv, bytes(page[26:end - 4]))
    else:
        iv = struct.pack("<IIQ", struct.unpack(">I", page[34:38])[0], page_no, lsn)
        page[38:len(page) - 8] = _decrypt(mode, key, iv, bytes(page[38:len(page) - 8]))
    return bytes(page)


def normalized(page, full_crc32):
    """A plain or decrypted page without the fields encryption changes (key version, checksums)."""
    page = bytearray(page)
    if full_crc32:
        t = struct.unpack(">H", page[24:26])[0]
        end = (t & 0xFF) << 8 if t & 0x8000 else len(page)
        page[0:4] = b"\0" * 4
        page[end - 4:end] = b"\0" * 4
        del page[end:]  # after a PAGE_COMPRESSED page's written size: whatever was there
    else:
        page[26:34] = b"\0" * 8
    return bytes(page)
