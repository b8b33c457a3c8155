/*
 * Copyright (c) 2026 MetaRoCE-ns3 authors
 *
 * SPDX-License-Identifier: GPL-2.0-only
 */

#ifndef METAROCE_SIMULATOR_IMPL_H
#define METAROCE_SIMULATOR_IMPL_H

#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/scheduler.h"
#include "ns3/simulator-impl.h"
#include "ns3/simulator.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <thread>

/**
 * \file
 * A single-process ns-3 simulator implementation for fabric simulations: the event loop of
 * ns3::DefaultSimulatorImpl without its per-event logging and hooks, and with a direct path
 * from the fabric's models into the event queue.
 */

namespace ns3
{

class MetaRoceScheduler;

/**
 * \ingroup metaroce
 * \brief ns-3's sequential simulator without per-event overhead (SimulatorImplementationType
 * "ns3::MetaRoceSimulatorImpl").
 *
 * It runs events in the same order as ns3::DefaultSimulatorImpl, numbers them (uids) the same
 * way and gives every Simulator call the same meaning, so a run gives byte-identical results
 * with either. What it leaves out:
 *  - Debian's libns3 is built with logging compiled in, so DefaultSimulatorImpl checks its log
 *    component in every Schedule and ScheduleWithContext call and around every event; this
 *    class has no logging on its per-event paths (EventImpl's own checks, in libns3-core's
 *    Invoke, constructor and destructor, remain);
 *  - DefaultSimulatorImpl builds an EventId for SimulatorImpl::PreEventHook before each event
 *    (two reference-count round trips and a call into libns3-core); nothing in ns-3's
 *    sequential simulator overrides the hook, so this class does not call it;
 *  - with ns3::MetaRoceScheduler it inserts and removes events without a virtual call.
 *
 * The fabric's per-frame paths (the channel's arrivals, the device's end of serialization)
 * reach it through MetaRoceSimulatorImpl::Active(), NowSteps(), ScheduleSteps() and
 * ScheduleStepsWithContext(), without Simulator's out-of-line wrappers; with any other
 * implementation (ns-3's real-time one, MPI's distributed ones) they use
 * Simulator's calls as before.
 *
 * Threads: like DefaultSimulatorImpl, ScheduleWithContext may be called from another thread
 * (the event is inserted when the running event ends, its delay counted from that event's
 * time, or when Run starts, from the time then; in real-time mode, MetaRoceRealtimeSimulatorImpl,
 * from the wall-clock time of the call while Run runs); every other call, Stop included, and
 * the fast paths, belong to the thread that runs the simulation.
 *
 * Active() is the object the Simulator uses: it is set when the Simulator gives this object
 * its scheduler or runs it, and cleared by Destroy (Simulator::Destroy) and disposal.
 */
class MetaRoceSimulatorImpl : public SimulatorImpl
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceSimulatorImpl();
    ~MetaRoceSimulatorImpl() override;

    // SimulatorImpl
    void Destroy() override;
    bool IsFinished() const override;
    void Stop() override;
    void Stop(const Time& delay) override;
    EventId Schedule(const Time& delay, EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override;
    EventId ScheduleNow(EventImpl* event) override;
    EventId ScheduleDestroy(EventImpl* event) override;
    void Remove(const EventId& id) override;
    void Cancel(const EventId& id) override;
    bool IsExpired(const EventId& id) const override;
    void Run() override;
    Time Now() const override;
    Time GetDelayLeft(const EventId& id) const override;
    Time GetMaximumSimulationTime() const override;
    void SetScheduler(ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override;
    uint32_t GetContext() const override;
    uint64_t GetEventCount() const override;

    /**
     * \return the implementation the Simulator uses if it is this class, else nullptr. One
     *         load: the per-frame paths test it and fall back to Simulator's calls.
     */
    static MetaRoceSimulatorImpl* Active()
    {
        return s_active;
    }

    /**
     * Make this class the SimulatorImplementationType for a one-process program, unless the
     * environment names one (NS_GLOBAL_VALUE); a --SimulatorImplementationType on a
     * CommandLine parsed afterwards still wins. Call it before any Simulator call.
     */
    static void SelectByDefault();

    /// \return the time now, in time steps (Now().GetTimeStep())
    uint64_t NowSteps() const
    {
        return m_currentTs;
    }

    /**
     * Schedule \p event \p delay time steps from now in the running event's context; the same
     * as Schedule(TimeStep(delay), event) without building the EventId.
     * \param delay the delay, in time steps (not negative)
     * \param event the event (its reference is taken over)
     */
    void ScheduleSteps(uint64_t delay, EventImpl* event)
    {
        InsertAt(m_currentTs + delay, m_currentContext, event);
    }

    /**
     * The same as ScheduleWithContext(context, TimeStep(delay), event), called by the
     * simulation's thread.
     * \param context the context of the event
     * \param delay the delay, in time steps (not negative)
     * \param event the event (its reference is taken over)
     */
    void ScheduleStepsWithContext(uint32_t context, uint64_t delay, EventImpl* event)
    {
        InsertAt(m_currentTs + delay, context, event);
    }

    /**
     * \return the wall clock in time steps since the real-time origin (real-time mode: see
     *         MetaRoceRealtimeSimulatorImpl; any thread)
     */
    uint64_t WallSteps() const;

  protected:
    void DoDispose() override;

    /// Pace the simulation on the wall clock (MetaRoceRealtimeSimulatorImpl); before Run.
    void EnableRealtime()
    {
        m_realtime = true;
    }

  private:
    /// An event scheduled by another thread, waiting for the simulation's thread.
    struct Foreign
    {
        uint32_t context; //!< its context
        /// Its delay, relative to the time the simulation thread takes it; if absolute (a
        /// real-time run), the wall-clock time (WallSteps) it is due at.
        uint64_t delay;
        EventImpl* event; //!< the event (one reference)
        bool absolute;    //!< delay is a wall-clock time
    };

    /// Run() in real-time mode: each event no earlier than its time on the wall clock.
    void RunRealtime();

    /**
     * Give the next uid to \p event at time \p ts and insert it.
     * \param ts the time, in time steps
     * \param context the context
     * \param event the event (its reference is taken over)
     * \return the uid it got
     */
    uint32_t InsertAt(uint64_t ts, uint32_t context, EventImpl* event)
    {
        Scheduler::Event ev;
        ev.impl = event;
        ev.key.m_ts = ts;
        ev.key.m_context = context;
        ev.key.m_uid = m_uid++;
        ++m_unscheduledEvents;
        InsertEvent(ev);
        return ev.key.m_uid;
    }

    /**
     * Insert into the event queue (directly if it is a MetaRoceScheduler).
     * \param ev the event
     */
    void InsertEvent(const Scheduler::Event& ev);
    /// Insert the events other threads scheduled since the last event.
    void TakeForeignEvents();
    /// Become Active() if the Simulator uses this object.
    void ClaimIfInUse();
    /// Run the earliest event.
    void ProcessOneEvent();
    /**
     * \param id an event id
     * \return true if \p id is a destroy event (ScheduleDestroy) still waiting
     */
    bool IsPendingDestroy(const EventId& id) const;

    static MetaRoceSimulatorImpl* s_active; //!< the implementation in use, if it is this class

    Ptr<Scheduler> m_events;                //!< the event queue
    MetaRoceScheduler* m_fast{nullptr};     //!< m_events if it is a MetaRoceScheduler
    uint64_t m_currentTs{0};                //!< time of the running (or last) event
    uint32_t m_currentContext;              //!< its context
    uint32_t m_currentUid;                  //!< its uid
    uint32_t m_uid;                         //!< the next uid
    uint64_t m_unscheduledEvents{0};        //!< events inserted and not yet run or removed
    uint64_t m_eventCount{0};               //!< events run
    bool m_stop{false};                     //!< Stop() was called
    std::list<EventId> m_destroyEvents;     //!< ScheduleDestroy's events, in order
    std::thread::id m_mainThread;           //!< the thread that runs the simulation
    std::atomic<bool> m_foreignEmpty{true}; //!< m_foreign is empty (read without the lock)
    std::deque<Foreign> m_foreign;          //!< events scheduled by other threads
    mutable std::mutex m_foreignMutex;      //!< guards m_foreign and m_foreignEmpty's writes
    bool m_realtime{false};                 //!< paced on the wall clock (EnableRealtime)
    std::condition_variable m_foreignCv;    //!< real-time mode: a foreign event came
    /// Real-time mode: the steady clock's nanoseconds at simulation time 0.
    std::atomic<int64_t> m_wallOriginNs{0};
    /// Real-time mode: Run is running (the wall clock has its origin).
    std::atomic<bool> m_running{false};
};

/**
 * \ingroup metaroce
 * \brief MetaRoceSimulatorImpl paced on the wall clock, for mixed runs
 * (SimulatorImplementationType "ns3::MetaRoceRealtimeSimulatorImpl").
 *
 * Best effort, as ns3::RealtimeSimulatorImpl's default mode: an event runs no earlier than its
 * time on the wall clock (simulation time 0 is the wall-clock time Run starts, a resumed Run
 * continues from the time it stopped), and as soon as it can when the simulation is behind.
 * While the next event is ahead it waits on a condition variable until the event's time or
 * until another thread schedules an event, with the thread's timer slack at 1 ns, instead of
 * ns-3's synchronizer, which spins for waits below its clock's jiffy. Events other threads
 * schedule with ScheduleWithContext are due at the wall-clock time of the call plus their
 * delay (at the simulation's time if it is behind that), as in RealtimeSimulatorImpl. Run
 * returns when Stop is called (from an event: Stop is not for other threads, which stop a run
 * by scheduling an event that calls it), not when the queue runs dry: other threads may still
 * schedule events. What it leaves out: the per-event lock and the synchronizer's clock
 * reads of RealtimeSimulatorImpl, whose mode "HardLimit" it does not have.
 */
class MetaRoceRealtimeSimulatorImpl : public MetaRoceSimulatorImpl
{
  public:
    /**
     * \brief Get the type ID.
     * \return the object TypeId
     */
    static TypeId GetTypeId();

    MetaRoceRealtimeSimulatorImpl();

    /// \return the wall clock as a simulation time (any thread).
    Time RealtimeNow() const
    {
        return TimeStep(int64_t(WallSteps()));
    }
};

/**
 * \ingroup metaroce
 * \return the simulation time now in time steps, from MetaRoceSimulatorImpl without a call
 *         when it is in use, else Simulator::Now()
 */
inline uint64_t
MetaRoceNowSteps()
{
    const MetaRoceSimulatorImpl* sim = MetaRoceSimulatorImpl::Active();
    return sim != nullptr ? sim->NowSteps() : uint64_t(Simulator::Now().GetTimeStep());
}

/**
 * \ingroup metaroce
 * Schedule \p event \p delay time steps from now in the running event's context: through
 * MetaRoceSimulatorImpl without a call into libns3 when it is in use, else Simulator::Schedule.
 * \param delay the delay, in time steps
 * \param event the event; the caller's reference is taken over
 */
inline void
MetaRoceScheduleSteps(uint64_t delay, EventImpl* event)
{
    if (MetaRoceSimulatorImpl* sim = MetaRoceSimulatorImpl::Active())
    {
        sim->ScheduleSteps(delay, event);
    }
    else
    {
        Simulator::Schedule(TimeStep(delay), Ptr<EventImpl>(event, false));
    }
}

/**
 * \ingroup metaroce
 * The same as MetaRoceScheduleSteps in context \p context (Simulator::ScheduleWithContext).
 * \param context the context of the event
 * \param delay the delay, in time steps
 * \param event the event; the caller's reference is taken over
 */
inline void
MetaRoceScheduleStepsWithContext(uint32_t context, uint64_t delay, EventImpl* event)
{
    if (MetaRoceSimulatorImpl* sim = MetaRoceSimulatorImpl::Active())
    {
        sim->ScheduleStepsWithContext(context, delay, event);
    }
    else
    {
        Simulator::ScheduleWithContext(context, TimeStep(delay), event);
    }
}

} // namespace ns3

#endif // METAROCE_SIMULATOR_IMPL_H
