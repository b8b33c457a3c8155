/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#include "metaroce-simulator-impl.h"

#include "metaroce-scheduler.h"

#include "ns3/assert.h"
#include "ns3/global-value.h"
#include "ns3/log.h"
#include "ns3/string.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("MetaRoceSimulatorImpl");

NS_OBJECT_ENSURE_REGISTERED(MetaRoceSimulatorImpl);
NS_OBJECT_ENSURE_REGISTERED(MetaRoceRealtimeSimulatorImpl);

namespace
{

/// \return the steady clock, nanoseconds
int64_t
SteadyNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

MetaRoceSimulatorImpl* MetaRoceSimulatorImpl::s_active = nullptr;

TypeId
MetaRoceSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceSimulatorImpl")
                            .SetParent<SimulatorImpl>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceSimulatorImpl>();
    return tid;
}

MetaRoceSimulatorImpl::MetaRoceSimulatorImpl()
    : m_currentContext(Simulator::NO_CONTEXT),
      m_currentUid(EventId::UID::INVALID),
      m_uid(EventId::UID::VALID),
      m_mainThread(std::this_thread::get_id())
{
    NS_LOG_FUNCTION(this);
}

TypeId
MetaRoceRealtimeSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::MetaRoceRealtimeSimulatorImpl")
                            .SetParent<MetaRoceSimulatorImpl>()
                            .SetGroupName("MetaRoce")
                            .AddConstructor<MetaRoceRealtimeSimulatorImpl>();
    return tid;
}

MetaRoceRealtimeSimulatorImpl::MetaRoceRealtimeSimulatorImpl()
{
    EnableRealtime();
}

uint64_t
MetaRoceSimulatorImpl::WallSteps() const
{
    const int64_t ns = SteadyNs() - m_wallOriginNs.load(std::memory_order_relaxed);
    return ns > 0 ? uint64_t(NanoSeconds(ns).GetTimeStep()) : 0;
}

MetaRoceSimulatorImpl::~MetaRoceSimulatorImpl()
{
    if (s_active == this)
    {
        s_active = nullptr;
    }
}

void
MetaRoceSimulatorImpl::SelectByDefault()
{
    const char* env = std::getenv("NS_GLOBAL_VALUE");
    if (env != nullptr && std::strstr(env, "SimulatorImplementationType=") != nullptr)
    {
        return;
    }
    GlobalValue::Bind("SimulatorImplementationType", StringValue("ns3::MetaRoceSimulatorImpl"));
}

void
MetaRoceSimulatorImpl::DoDispose()
{
    NS_LOG_FUNCTION(this);
    if (s_active == this)
    {
        s_active = nullptr;
    }
    TakeForeignEvents();
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            m_events->RemoveNext().impl->Unref();
        }
    }
    m_events = nullptr;
    m_fast = nullptr;
    SimulatorImpl::DoDispose();
}

void
MetaRoceSimulatorImpl::Destroy()
{
    NS_LOG_FUNCTION(this);
    while (!m_destroyEvents.empty())
    {
        const Ptr<EventImpl> event = m_destroyEvents.front().PeekEventImpl();
        m_destroyEvents.pop_front();
        if (!event->IsCancelled())
        {
            event->Invoke();
        }
    }
    // Simulator::Destroy calls this and then lets go of the object, which someone else may
    // still hold (a Ptr from GetImplementation or SetImplementation): the next simulation
    // must not see it as the one in use.
    if (s_active == this)
    {
        s_active = nullptr;
    }
}

void
MetaRoceSimulatorImpl::ClaimIfInUse()
{
    // Only the implementation the Simulator uses is Active(): any object of this class can be
    // told to SetScheduler or Run. Simulator stores its pointer before it calls SetScheduler
    // on a new implementation, so this does not make a second one.
    if (PeekPointer(Simulator::GetImplementation()) == this)
    {
        s_active = this;
    }
}

void
MetaRoceSimulatorImpl::SetScheduler(ObjectFactory schedulerFactory)
{
    NS_LOG_FUNCTION(this << schedulerFactory);
    Ptr<Scheduler> scheduler = schedulerFactory.Create<Scheduler>();
    if (m_events)
    {
        while (!m_events->IsEmpty())
        {
            scheduler->Insert(m_events->RemoveNext());
        }
    }
    m_events = scheduler;
    m_fast = dynamic_cast<MetaRoceScheduler*>(PeekPointer(m_events));
    ClaimIfInUse();
}

void
MetaRoceSimulatorImpl::InsertEvent(const Scheduler::Event& ev)
{
    if (m_fast != nullptr)
    {
        m_fast->MetaRoceScheduler::Insert(ev);
    }
    else
    {
        m_events->Insert(ev);
    }
}

bool
MetaRoceSimulatorImpl::IsFinished() const
{
    return m_stop || m_events->IsEmpty();
}

void
MetaRoceSimulatorImpl::Stop()
{
    NS_LOG_FUNCTION(this);
    m_stop = true;
}

void
MetaRoceSimulatorImpl::Stop(const Time& delay)
{
    NS_LOG_FUNCTION(this << delay.GetTimeStep());
    Simulator::Schedule(delay, &Simulator::Stop);
}

EventId
MetaRoceSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(m_mainThread == std::this_thread::get_id(),
                  "Simulator::Schedule called from a thread that does not run the simulation");
    NS_ASSERT_MSG(delay.IsPositive(), "Simulator::Schedule with a negative delay");
    const uint64_t ts = m_currentTs + uint64_t(delay.GetTimeStep());
    const uint32_t uid = InsertAt(ts, m_currentContext, event);
    return EventId(Ptr<EventImpl>(event), ts, m_currentContext, uid);
}

void
MetaRoceSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    if (m_mainThread == std::this_thread::get_id())
    {
        InsertAt(m_currentTs + uint64_t(delay.GetTimeStep()), context, event);
        return;
    }
    // Another thread: the simulation's thread inserts it when the running event ends (or when
    // Run starts), the delay counted from that time (as DefaultSimulatorImpl does); in
    // real-time mode from the wall clock now (as RealtimeSimulatorImpl does).
    const uint64_t steps = uint64_t(delay.GetTimeStep());
    std::lock_guard<std::mutex> lock(m_foreignMutex);
    const bool absolute = m_realtime && m_running.load(std::memory_order_acquire);
    m_foreign.push_back(Foreign{context, absolute ? WallSteps() + steps : steps, event, absolute});
    m_foreignEmpty.store(false, std::memory_order_release);
    if (m_realtime)
    {
        m_foreignCv.notify_one();
    }
}

EventId
MetaRoceSimulatorImpl::ScheduleNow(EventImpl* event)
{
    return Schedule(TimeStep(0), event);
}

EventId
MetaRoceSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    NS_ASSERT_MSG(m_mainThread == std::this_thread::get_id(),
                  "Simulator::ScheduleDestroy called from a thread that does not run the "
                  "simulation");
    // A destroy event has uid DESTROY and takes a uid from the count all the same (so the
    // events after it are numbered as by DefaultSimulatorImpl).
    EventId id(Ptr<EventImpl>(event, false), m_currentTs, 0xffffffff, EventId::UID::DESTROY);
    m_destroyEvents.push_back(id);
    ++m_uid;
    return id;
}

void
MetaRoceSimulatorImpl::TakeForeignEvents()
{
    if (m_foreignEmpty.load(std::memory_order_acquire))
    {
        return;
    }
    std::deque<Foreign> taken;
    {
        std::lock_guard<std::mutex> lock(m_foreignMutex);
        taken.swap(m_foreign);
        m_foreignEmpty.store(true, std::memory_order_relaxed);
    }
    for (const Foreign& f : taken)
    {
        // (Real time: due at the wall-clock time of the call plus its delay, or at the
        // simulation's time if the simulation is already past it.)
        InsertAt(f.absolute ? std::max(m_currentTs, f.delay) : m_currentTs + f.delay,
                 f.context,
                 f.event);
    }
}

void
MetaRoceSimulatorImpl::ProcessOneEvent()
{
    const Scheduler::Event next =
        m_fast != nullptr ? m_fast->MetaRoceScheduler::RemoveNext() : m_events->RemoveNext();
    NS_ASSERT_MSG(next.key.m_ts >= m_currentTs, "an event earlier than the one before it");
    --m_unscheduledEvents;
    ++m_eventCount;
    m_currentTs = next.key.m_ts;
    m_currentContext = next.key.m_context;
    m_currentUid = next.key.m_uid;
    next.impl->Invoke();
    next.impl->Unref();
    TakeForeignEvents();
}

void
MetaRoceSimulatorImpl::Run()
{
    NS_LOG_FUNCTION(this);
    if (m_mainThread != std::this_thread::get_id())
    {
        // (Written only if it changes: other threads read it in ScheduleWithContext, and a
        // mixed run's threads start before Run.)
        m_mainThread = std::this_thread::get_id();
    }
    ClaimIfInUse();
    if (m_realtime)
    {
        RunRealtime();
        return;
    }
    TakeForeignEvents();
    m_stop = false;
    // m_fast is read on every pass: an event may change the scheduler (SetScheduler).
    while (!m_stop &&
           !(m_fast != nullptr ? m_fast->MetaRoceScheduler::IsEmpty() : m_events->IsEmpty()))
    {
        ProcessOneEvent();
    }
    NS_ASSERT_MSG(!m_events->IsEmpty() || m_unscheduledEvents == 0,
                  "the simulation ran out of events with " << m_unscheduledEvents
                                                           << " unaccounted for");
}

void
MetaRoceSimulatorImpl::RunRealtime()
{
    // The wall clock's origin: simulation time m_currentTs is now.
    m_wallOriginNs.store(SteadyNs() - TimeStep(int64_t(m_currentTs)).GetNanoSeconds(),
                         std::memory_order_relaxed);
    m_running.store(true, std::memory_order_release);
#ifdef __linux__
    // Wake-ups at the event's time, not up to the default 50 us later (this thread only;
    // restored when Run returns).
    const int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    m_stop = false;
    uint64_t wall = WallSteps(); // the wall clock when last read
    while (!m_stop)
    {
        TakeForeignEvents();
        if (m_fast != nullptr ? m_fast->MetaRoceScheduler::IsEmpty() : m_events->IsEmpty())
        {
            // Nothing to run: wait for another thread's event (Stop comes from an event).
            std::unique_lock<std::mutex> lock(m_foreignMutex);
            m_foreignCv.wait_for(lock, std::chrono::milliseconds(100), [this]() {
                return !m_foreign.empty();
            });
            wall = WallSteps();
            continue;
        }
        const uint64_t next = m_events->PeekNext().key.m_ts;
        if (next > wall)
        {
            wall = WallSteps(); // (read again only when the last reading is not late enough)
            if (next > wall)
            {
                // (At most 100 ms at a time: an event far in the future cannot overflow it.)
                const uint64_t waitNs =
                    std::min<uint64_t>(TimeStep(int64_t(next - wall)).GetNanoSeconds(), 100000000);
                const std::chrono::steady_clock::time_point due{std::chrono::nanoseconds(
                    m_wallOriginNs.load(std::memory_order_relaxed) +
                    TimeStep(int64_t(wall)).GetNanoSeconds() + int64_t(waitNs))};
                std::unique_lock<std::mutex> lock(m_foreignMutex);
                m_foreignCv.wait_until(lock, due, [this]() { return !m_foreign.empty(); });
                wall = WallSteps();
                continue;
            }
        }
        ProcessOneEvent();
    }
    {
        // Events other threads schedule from now on count from the simulation's time when the
        // next Run takes them; those already waiting keep what is left of their delay (their
        // wall-clock times belong to this run's origin).
        std::lock_guard<std::mutex> lock(m_foreignMutex);
        m_running.store(false, std::memory_order_release);
        for (Foreign& f : m_foreign)
        {
            if (f.absolute)
            {
                f.delay = std::max(f.delay, m_currentTs) - m_currentTs;
                f.absolute = false;
            }
        }
    }
#ifdef __linux__
    if (slack > 0)
    {
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0UL, 0UL, 0UL);
    }
#endif
}

Time
MetaRoceSimulatorImpl::Now() const
{
    // No logging here: the log's time printer calls Now().
    return TimeStep(m_currentTs);
}

bool
MetaRoceSimulatorImpl::IsPendingDestroy(const EventId& id) const
{
    for (const EventId& pending : m_destroyEvents)
    {
        if (pending == id)
        {
            return true;
        }
    }
    return false;
}

bool
MetaRoceSimulatorImpl::IsExpired(const EventId& id) const
{
    EventImpl* event = id.PeekEventImpl();
    if (event == nullptr || event->IsCancelled())
    {
        return true;
    }
    if (id.GetUid() == EventId::UID::DESTROY)
    {
        return !IsPendingDestroy(id);
    }
    // It has run if it sorts before (or is) the running event: by time, then by uid.
    return id.GetTs() < m_currentTs || (id.GetTs() == m_currentTs && id.GetUid() <= m_currentUid);
}

Time
MetaRoceSimulatorImpl::GetDelayLeft(const EventId& id) const
{
    return IsExpired(id) ? TimeStep(0) : TimeStep(id.GetTs() - m_currentTs);
}

void
MetaRoceSimulatorImpl::Remove(const EventId& id)
{
    if (id.GetUid() == EventId::UID::DESTROY)
    {
        for (auto it = m_destroyEvents.begin(); it != m_destroyEvents.end(); ++it)
        {
            if (*it == id)
            {
                m_destroyEvents.erase(it);
                break;
            }
        }
        return;
    }
    if (IsExpired(id))
    {
        return;
    }
    Scheduler::Event ev;
    ev.impl = id.PeekEventImpl();
    ev.key.m_ts = id.GetTs();
    ev.key.m_context = id.GetContext();
    ev.key.m_uid = id.GetUid();
    m_events->Remove(ev);
    ev.impl->Cancel();
    // The queue's reference goes with the event.
    ev.impl->Unref();
    --m_unscheduledEvents;
}

void
MetaRoceSimulatorImpl::Cancel(const EventId& id)
{
    if (!IsExpired(id))
    {
        id.PeekEventImpl()->Cancel();
    }
}

Time
MetaRoceSimulatorImpl::GetMaximumSimulationTime() const
{
    return TimeStep(std::numeric_limits<int64_t>::max());
}

uint32_t
MetaRoceSimulatorImpl::GetSystemId() const
{
    return 0;
}

uint32_t
MetaRoceSimulatorImpl::GetContext() const
{
    return m_currentContext;
}

uint64_t
MetaRoceSimulatorImpl::GetEventCount() const
{
    return m_eventCount;
}

} // namespace ns3
