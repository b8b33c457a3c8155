/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_BYTE_ORDER_H
#define METAROCE_BYTE_ORDER_H

#include <cstddef>
#include <cstdint>

/**
 * \file
 * Explicit big-endian (network order) load/store helpers used by every wire header.
 *
 * Headers are never read by casting bytes to structs: each field is read and written
 * through these helpers at a named offset, so the code is independent of host byte order,
 * alignment and compiler padding.
 */

namespace metaroce
{

/// \return the byte at \p p.
inline uint8_t
ReadU8(const uint8_t* p)
{
    return p[0];
}

/// \return the big-endian 16-bit value at \p p.
inline uint16_t
ReadU16(const uint8_t* p)
{
    return static_cast<uint16_t>((uint16_t(p[0]) << 8) | uint16_t(p[1]));
}

/// \return the big-endian 24-bit value at \p p.
inline uint32_t
ReadU24(const uint8_t* p)
{
    return (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | uint32_t(p[2]);
}

/// \return the big-endian 32-bit value at \p p.
inline uint32_t
ReadU32(const uint8_t* p)
{
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

/// \return the big-endian 64-bit value at \p p.
inline uint64_t
ReadU64(const uint8_t* p)
{
    return (uint64_t(ReadU32(p)) << 32) | uint64_t(ReadU32(p + 4));
}

/// Store \p v at \p p.
inline void
WriteU8(uint8_t* p, uint8_t v)
{
    p[0] = v;
}

/// Store \p v big-endian at \p p.
inline void
WriteU16(uint8_t* p, uint16_t v)
{
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}

/// Store the low 24 bits of \p v big-endian at \p p.
inline void
WriteU24(uint8_t* p, uint32_t v)
{
    p[0] = uint8_t(v >> 16);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v);
}

/// Store \p v big-endian at \p p.
inline void
WriteU32(uint8_t* p, uint32_t v)
{
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}

/// Store \p v big-endian at \p p.
inline void
WriteU64(uint8_t* p, uint64_t v)
{
    WriteU32(p, uint32_t(v >> 32));
    WriteU32(p + 4, uint32_t(v));
}

} // namespace metaroce

#endif // METAROCE_BYTE_ORDER_H
