/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-scheduler.h"

#include "ns3/abort.h"
#include "ns3/enum.h"
#include "ns3/log.h"

#include <algorithm>
#include <atomic>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceScheduler");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceScheduler);

namespace
{
/// The tag of the next event this thread inserts (0 = none).
thread_local uint32_t g_nextTag = 0;
/// Schedulers with the Link tie-break that exist.
std::atomic<uint32_t> g_linkSchedulers{0};
/// Children per heap node.
constexpr std::size_t ARITY = 4;
} // namespace

TypeId
MetaRoceScheduler::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::MetaRoceScheduler")
            .SetParent<Scheduler>()
            .SetGroupName("MetaRoce")
            .AddConstructor<MetaRoceScheduler>()
            .AddAttribute("TieBreak",
                          "Order of events of equal time: Insertion (ns-3's order: by uid) or "
                          "Link (untagged events by uid, then frame arrivals by link end; the "
                          "same order on any number of MPI ranks).",
                          EnumValue(INSERTION),
                          MakeEnumAccessor(&MetaRoceScheduler::SetTieBreak,
                                           &MetaRoceScheduler::GetTieBreak),
                          MakeEnumChecker(INSERTION, "Insertion", LINK, "Link"));
    return tid;
}

MetaRoceScheduler::MetaRoceScheduler()
{
    NS_LOG_FUNCTION(this);
}

MetaRoceScheduler::~MetaRoceScheduler()
{
    NS_LOG_FUNCTION(this);
    SetTieBreak(INSERTION);
}

void
MetaRoceScheduler::SetTieBreak(TieBreak tieBreak)
{
    if (tieBreak == m_tieBreak)
    {
        return;
    }
    if (tieBreak == LINK)
    {
        ++g_linkSchedulers;
    }
    else
    {
        --g_linkSchedulers;
    }
    m_tieBreak = tieBreak;
}

MetaRoceScheduler::TieBreak
MetaRoceScheduler::GetTieBreak() const
{
    return m_tieBreak;
}

bool
MetaRoceScheduler::LinkTieBreakInUse()
{
    return g_linkSchedulers.load() > 0;
}

void
MetaRoceScheduler::TagNextEvent(uint32_t tag)
{
    g_nextTag = tag;
}

uint32_t
MetaRoceScheduler::LinkTag(uint32_t channelId, uint32_t direction)
{
    return channelId * 2 + (direction & 1) + 1;
}

Scheduler::Event
MetaRoceScheduler::ToEvent(const Entry& entry)
{
    Event ev;
    ev.impl = entry.impl;
    ev.key.m_ts = entry.ts;
    ev.key.m_uid = entry.uid;
    ev.key.m_context = entry.context;
    return ev;
}

void
MetaRoceScheduler::Insert(const Event& ev)
{
    const uint32_t tag = g_nextTag;
    g_nextTag = 0;
    Entry entry;
    entry.ts = ev.key.m_ts;
    entry.order = m_tieBreak == LINK ? (uint64_t(tag) << 32) | ev.key.m_uid : ev.key.m_uid;
    entry.impl = ev.impl;
    entry.uid = ev.key.m_uid;
    entry.context = ev.key.m_context;
    m_heap.emplace_back();
    SiftUp(m_heap.size() - 1, entry);
}

bool
MetaRoceScheduler::IsEmpty() const
{
    return m_heap.empty();
}

Scheduler::Event
MetaRoceScheduler::PeekNext() const
{
    NS_ASSERT(!m_heap.empty());
    return ToEvent(m_heap.front());
}

Scheduler::Event
MetaRoceScheduler::RemoveNext()
{
    NS_ASSERT(!m_heap.empty());
    const Event next = ToEvent(m_heap.front());
    const Entry last = m_heap.back();
    m_heap.pop_back();
    if (!m_heap.empty())
    {
        SiftDown(0, last);
    }
    return next;
}

void
MetaRoceScheduler::Remove(const Event& ev)
{
    // Only Simulator::Remove gets here (EventId::Cancel does not): a linear search is enough.
    for (std::size_t i = 0; i < m_heap.size(); ++i)
    {
        if (m_heap[i].uid != ev.key.m_uid || m_heap[i].impl != ev.impl)
        {
            continue;
        }
        const Entry last = m_heap.back();
        m_heap.pop_back();
        if (i == m_heap.size())
        {
            return;
        }
        if (i > 0 && Before(last, m_heap[(i - 1) / ARITY]))
        {
            SiftUp(i, last);
        }
        else
        {
            SiftDown(i, last);
        }
        return;
    }
    NS_ABORT_MSG("MetaRoceScheduler::Remove: event " << ev.key.m_uid << " is not scheduled");
}

void
MetaRoceScheduler::SiftUp(std::size_t hole, const Entry& entry)
{
    while (hole > 0)
    {
        const std::size_t parent = (hole - 1) / ARITY;
        if (!Before(entry, m_heap[parent]))
        {
            break;
        }
        m_heap[hole] = m_heap[parent];
        hole = parent;
    }
    m_heap[hole] = entry;
}

void
MetaRoceScheduler::SiftDown(std::size_t hole, const Entry& entry)
{
    const std::size_t size = m_heap.size();
    for (;;)
    {
        const std::size_t first = hole * ARITY + 1;
        if (first >= size)
        {
            break;
        }
        const std::size_t end = std::min(first + ARITY, size);
        std::size_t best = first;
        for (std::size_t child = first + 1; child < end; ++child)
        {
            if (Before(m_heap[child], m_heap[best]))
            {
                best = child;
            }
        }
        if (!Before(m_heap[best], entry))
        {
            break;
        }
        m_heap[hole] = m_heap[best];
        hole = best;
    }
    m_heap[hole] = entry;
}

} // namespace ns3
