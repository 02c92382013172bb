#!/usr/bin/env python3
"""Compares the InnoDB data files of two prepared backups page by page.

usage: compare_pages.py DIR_A DIR_B [--max-report=N] [--keys=KEYFILE --algorithm=aes_cbc|aes_ctr]

Every data file (ibdata*, undo*, db/*.ibd) must exist in both, with the same
size and identical pages. Differences are printed one line per page with the
byte ranges that differ; the exit status is 1 if anything differs. The page
size is read from each file's FSP flags (ROW_FORMAT=COMPRESSED tables have
smaller pages).

A full_crc32 PAGE_COMPRESSED page that both sides hold compressed but with other bytes counts as the
same when both decompress to the same page: the two preparers may run other versions of the
compression library (mariadb-backup 11.8 in its Debian 13 root links a newer snappy than xbak on
Debian 12), whose output differs for the same input; such pages are counted apart.

With --keys, a page that one side holds encrypted and the other plain counts as the same when it
decrypts into the other (key version and checksums aside): whether a preparer writes a page
encrypted is a choice the format leaves open while a tablespace is being decrypted (see
docs/encryption.md); such pages are counted apart.
"""
import os
import struct
import sys


def data_files(root):
    out = set()
    for name in os.listdir(root):
        p = os.path.join(root, name)
        if (name.startswith("ibdata") and name[6:].isdigit()) or (name.startswith("undo") and name[4:].isdigit()):
            out.add(name)
        elif os.path.isdir(p):
            for f in os.listdir(p):
                if f.endswith(".ibd"):
                    out.add(name + "/" + f)
    return out


def physical_page_size(path, default):
    with open(path, "rb") as f:
        head = f.read(64)
    if len(head) < 58:
        return default
    flags = struct.unpack(">I", head[38 + 16:38 + 20])[0]
    if flags & 0x10:  # full_crc32: no ROW_FORMAT=COMPRESSED
        ssize = flags & 0xF
        return (512 << ssize) if ssize else default
    zip_ssize = (flags >> 1) & 0xF
    if zip_ssize:
        return 512 << zip_ssize
    page_ssize = (flags >> 6) & 0xF
    return (512 << page_ssize) if page_ssize else default


def full_crc32_page_compressed(path):
    with open(path, "rb") as f:
        head = f.read(64)
    if len(head) < 58:
        return False
    flags = struct.unpack(">I", head[38 + 16:38 + 20])[0]
    return bool(flags & 0x10) and ((flags >> 5) & 7) != 0


# MariaDB's page_compression algorithms (fil0pagecompress): the codec of each, as the server calls it.
def _c_decoder(lib, fn):
    import ctypes
    import ctypes.util
    try:
        so = ctypes.CDLL(ctypes.util.find_library(lib) or f"lib{lib}.so")
    except OSError:
        return None
    f = getattr(so, fn)

    def decode(data, size):
        out = ctypes.create_string_buffer(size)
        if fn == "snappy_uncompress":
            n = ctypes.c_size_t(size)
            ok = f(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n)) == 0
        elif fn == "LZ4_decompress_safe":
            r = f(data, out, ctypes.c_int(len(data)), ctypes.c_int(size))
            ok, n = r >= 0, ctypes.c_size_t(max(r, 0))
        else:  # lzo1x_decompress_safe
            n = ctypes.c_size_t(size)
            ok = f(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n), None) == 0
        return out.raw[:n.value] if ok else None
    return decode


def _decoders():
    import bz2
    import lzma
    import zlib
    return {1: lambda d, n: zlib.decompress(d), 2: _c_decoder("lz4", "LZ4_decompress_safe"),
            3: _c_decoder("lzo2", "lzo1x_decompress_safe"), 4: lambda d, n: lzma.decompress(d),
            5: lambda d, n: bz2.decompress(d), 6: _c_decoder("snappy", "snappy_uncompress")}


def decompressed(page, algo):
    """The plain frame of a full_crc32 PAGE_COMPRESSED page (None if it cannot be had)."""
    written = compressed_size(page)
    if not written or written >= len(page):
        return None
    end = written - 4
    if algo in (2, 3, 6):  # lz4, lzo, snappy: the payload's end in the byte before the checksum
        b = page[written - 5]
        end = (written - 256 + b if b else written) - 5
    decode = _decoders().get(algo)
    try:
        frame = decode(bytes(page[26:end]), len(page)) if decode else None
    except Exception:
        return None
    return frame if frame is not None and len(frame) == len(page) else None


def compressed_size(page):
    t = struct.unpack(">H", page[24:26])[0]
    return (t & 0x7FFF) << 8 if t & 0x8000 else 0


def ranges(a, b):
    out, start = [], None
    for i in range(len(a)):
        if a[i] != b[i]:
            if start is None:
                start = i
        elif start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(a)))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    max_report = 20
    keys, algorithm = None, "aes_cbc"
    for a in sys.argv[1:]:
        if a.startswith("--max-report="):
            max_report = int(a.split("=", 1)[1])
        if a.startswith("--keys="):
            import innodb_crypt
            keys = innodb_crypt.load_keys(a.split("=", 1)[1])
        if a.startswith("--algorithm="):
            algorithm = a.split("=", 1)[1]
    one_side_encrypted = 0
    a_dir, b_dir = args
    default = 16384
    cnf = os.path.join(a_dir, "backup-my.cnf")
    if os.path.exists(cnf):
        for line in open(cnf):
            if line.replace("-", "_").startswith("innodb_page_size"):
                default = int(line.split("=")[1])
    fa, fb = data_files(a_dir), data_files(b_dir)
    problems = 0
    for f in sorted(fa ^ fb):
        print(f"{f}: only in {a_dir if f in fa else b_dir}")
        problems += 1
    pages = 0
    reported = 0
    beyond = 0
    recompressed = 0
    for f in sorted(fa & fb):
        pa, pb = os.path.join(a_dir, f), os.path.join(b_dir, f)
        sa, sb = os.path.getsize(pa), os.path.getsize(pb)
        if sa != sb:
            print(f"{f}: size {sa} vs {sb}")
            problems += 1
        # ibdata2.. continue the system tablespace: no page 0 of their own.
        ps = default if f.startswith("ibdata") and f != "ibdata1" else physical_page_size(pa, default)
        pcomp = full_crc32_page_compressed(pa) if not f.startswith("ibdata") else False
        algo = 0
        if pcomp:
            with open(pa, "rb") as h:
                algo = (struct.unpack(">I", h.read(58)[54:58])[0] >> 5) & 7
        cd, fcrc32, space_id = None, False, 0
        if keys is not None and not (f.startswith("ibdata") and f != "ibdata1"):
            import innodb_crypt
            with open(pa, "rb") as h:
                page0 = h.read(ps)
            flags = struct.unpack(">I", page0[54:58])[0]
            fcrc32 = bool(flags & 0x10)
            space_id = struct.unpack(">I", page0[34:38])[0]
            cd = innodb_crypt.crypt_data(page0, innodb_crypt.crypt_offset(default, ps))
        with open(pa, "rb") as ha, open(pb, "rb") as hb:
            n = 0
            while True:
                x, y = ha.read(ps), hb.read(ps)
                if not x and not y:
                    break
                pages += 1
                if x != y and pcomp and len(x) == len(y):
                    # A full_crc32 PAGE_COMPRESSED page is its first W bytes (W is in the page
                    # type); after them the server leaves whatever an earlier, longer write of the
                    # page left there (it writes W rounded up to the file system block). That
                    # depends on when each preparer happened to write the page: not compared.
                    wx, wy = compressed_size(x), compressed_size(y)
                    if wx and wx == wy and x[:wx] == y[:wy]:
                        beyond += 1
                        x = y
                    elif wx and wy:
                        dx, dy = decompressed(x, algo), decompressed(y, algo)
                        if dx is not None and dx == dy:
                            recompressed += 1
                            x = y
                if x != y and cd is not None and n != 0 and len(x) == len(y):
                    import innodb_crypt
                    kx, ky = innodb_crypt.key_version(x, fcrc32), innodb_crypt.key_version(y, fcrc32)
                    if (kx == 0) != (ky == 0):
                        dx = innodb_crypt.decrypt_page(x, space_id, cd, keys, algorithm, fcrc32) if kx else x
                        dy = innodb_crypt.decrypt_page(y, space_id, cd, keys, algorithm, fcrc32) if ky else y
                        if innodb_crypt.normalized(dx, fcrc32) == innodb_crypt.normalized(dy, fcrc32):
                            one_side_encrypted += 1
                            x = y
                if x != y:
                    problems += 1
                    if reported < max_report:
                        reported += 1
                        r = ranges(x, y) if len(x) == len(y) else [("len", len(x), len(y))]
                        ptype = struct.unpack(">H", x[24:26])[0] if len(x) >= 26 else -1
                        print(f"{f} page {n} (type {ptype}): differs at {r[:8]}")
                n += 1
    extra = f" ({beyond} page_compressed pages differ only after their written size)" if beyond else ""
    if recompressed:
        extra += f" ({recompressed} page_compressed pages compressed to other bytes, the same once decompressed)"
    if one_side_encrypted:
        extra += f" ({one_side_encrypted} pages encrypted on one side only, the same once decrypted)"
    print(f"compare_pages: {len(fa & fb)} files, {pages} pages, {problems} differences{extra}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
