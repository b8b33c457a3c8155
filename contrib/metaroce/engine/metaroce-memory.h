/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_MEMORY_H
#define METAROCE_MEMORY_H

#include "metaroce-verbs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace metaroce
{

/**
 * The registered memory regions of one endpoint, with key lookup and bounds checks.
 * A key is (index + 1) << 8 | tag, where the tag changes on every registration of the
 * index, so a key of a deregistered region does not match a later one.
 */
class MemoryTable
{
  public:
    /**
     * Register \p length bytes at \p base (nullptr: a virtual region with no bytes) under
     * the I/O virtual address \p iova.
     * \return the region; lkey == 0 if the arguments are invalid
     */
    MemoryRegion Register(uint8_t* base, uint64_t length, uint32_t access, uint64_t iova);

    /// Deregister the region with local key \p lkey. \return false if unknown.
    bool Deregister(uint32_t lkey);

    /**
     * Check that [addr, addr+length) lies in the region of \p key and that the region grants
     * \p access.
     * \param[out] ptr host pointer of addr, or nullptr for a virtual region
     * \return OK, INVALID_LKEY (no such key or out of bounds) or NO_PERMISSION
     */
    PostStatus Check(uint32_t key,
                     uint64_t addr,
                     uint64_t length,
                     uint32_t access,
                     uint8_t** ptr) const;

    /**
     * Write \p length bytes from \p src at \p addr of the region of \p key, which must grant
     * ACCESS_LOCAL_WRITE (a READ answer or an atomic's original landing in the requester's
     * buffer; a virtual region keeps nothing). A zero length checks nothing.
     * \return false if the range is not writable that way (nothing is written)
     */
    bool WriteLocal(uint32_t key, uint64_t addr, const void* src, uint32_t length);

    /// \return the number of registered regions.
    size_t Size() const;

    /// \return the bytes of the registered regions (virtual ones included).
    uint64_t Bytes() const
    {
        return m_bytes;
    }

  private:
    /// One region.
    struct Entry
    {
        uint8_t* base{nullptr}; //!< host bytes (nullptr: virtual)
        uint64_t iova{0};       //!< first address
        uint64_t length{0};     //!< bytes
        uint32_t access{0};     //!< AccessFlags
        uint32_t key{0};        //!< current key (0: free)
    };

    std::vector<Entry> m_entries; //!< regions by index
    std::vector<uint32_t> m_free; //!< free indexes
    uint8_t m_tag{0};             //!< last tag handed out
    uint64_t m_bytes{0};          //!< sum of the registered regions' lengths
};

/**
 * Run an IB atomic on the 64-bit word at \p word (host order, as Linux rxe keeps it; nullptr:
 * a virtual region, which reads 0 and keeps nothing): Compare&Swap stores \p swapAdd if the
 * word equals \p compare (\p compareSwap), Fetch&Add adds \p swapAdd.
 * \return the word's value before the operation
 */
uint64_t ApplyAtomic(uint8_t* word, bool compareSwap, uint64_t compare, uint64_t swapAdd);

} // namespace metaroce

#endif // METAROCE_MEMORY_H
