/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-memory.h"

#include <cstring>

namespace metaroce
{

MemoryRegion
MemoryTable::Register(uint8_t* base, uint64_t length, uint32_t access, uint64_t iova)
{
    MemoryRegion mr;
    if (length == 0 || iova + length < iova || m_entries.size() >= (1u << 24) - 1)
    {
        return mr;
    }
    uint32_t index;
    if (!m_free.empty())
    {
        index = m_free.back();
        m_free.pop_back();
    }
    else
    {
        index = uint32_t(m_entries.size());
        m_entries.emplace_back();
    }
    m_tag = uint8_t(m_tag + 1);
    Entry& e = m_entries[index];
    e.base = base;
    e.iova = iova;
    e.length = length;
    e.access = access;
    e.key = ((index + 1) << 8) | m_tag;
    m_bytes += length;
    mr.lkey = e.key;
    mr.rkey = e.key;
    mr.addr = iova;
    mr.length = length;
    return mr;
}

bool
MemoryTable::Deregister(uint32_t lkey)
{
    uint32_t index = (lkey >> 8) - 1;
    if ((lkey >> 8) == 0 || index >= m_entries.size() || m_entries[index].key != lkey)
    {
        return false;
    }
    m_bytes -= m_entries[index].length;
    m_entries[index] = Entry{};
    m_free.push_back(index);
    return true;
}

PostStatus
MemoryTable::Check(uint32_t key, uint64_t addr, uint64_t length, uint32_t access, uint8_t** ptr)
    const
{
    uint32_t index = (key >> 8) - 1;
    if ((key >> 8) == 0 || index >= m_entries.size() || m_entries[index].key != key)
    {
        return PostStatus::INVALID_LKEY;
    }
    const Entry& e = m_entries[index];
    // Overflow-safe: addr >= iova and addr + length <= iova + length(region).
    if (addr < e.iova || addr - e.iova > e.length || length > e.length - (addr - e.iova))
    {
        return PostStatus::INVALID_LKEY;
    }
    if ((e.access & access) != access)
    {
        return PostStatus::NO_PERMISSION;
    }
    *ptr = e.base ? e.base + (addr - e.iova) : nullptr;
    return PostStatus::OK;
}

size_t
MemoryTable::Size() const
{
    return m_entries.size() - m_free.size();
}

bool
MemoryTable::WriteLocal(uint32_t key, uint64_t addr, const void* src, uint32_t length)
{
    if (length == 0)
    {
        return true;
    }
    uint8_t* dst = nullptr;
    if (Check(key, addr, length, ACCESS_LOCAL_WRITE, &dst) != PostStatus::OK)
    {
        return false;
    }
    if (dst != nullptr)
    {
        std::memcpy(dst, src, length);
    }
    return true;
}

uint64_t
ApplyAtomic(uint8_t* word, bool compareSwap, uint64_t compare, uint64_t swapAdd)
{
    uint64_t original = 0;
    if (word == nullptr)
    {
        return original;
    }
    std::memcpy(&original, word, sizeof(original));
    uint64_t value = compareSwap ? (original == compare ? swapAdd : original) : original + swapAdd;
    std::memcpy(word, &value, sizeof(value));
    return original;
}

} // namespace metaroce
