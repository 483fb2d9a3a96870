package org.apache.flink.runtime.scheduler;

import org.apache.flink.api.common.time.Time;
import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.jobmanager.scheduler.SlotSharingGroup;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;

import java.time.Duration;
import java.util.function.Function;

/**
 * The Flink internals whose signatures differ between lines, behind one API (same class in each overlay). Flink 1.19
 * and 1.20: an execution slot sharing group is made empty and given its resource profile afterwards, and the allocator
 * takes its timeout as a {@code Time}.
 */
final class PlacementCompat {
    private PlacementCompat() {}

    /** An execution slot sharing group that requests {@code pinned}'s resource profile. */
    static ExecutionSlotSharingGroup newExecutionSlotSharingGroup(SlotSharingGroup pinned) {
        ExecutionSlotSharingGroup group = new ExecutionSlotSharingGroup();
        group.setResourceProfile(pinned.getResourceProfile());
        return group;
    }

    static ExecutionSlotAllocator newAllocator(
            PhysicalSlotProvider provider,
            boolean slotWillBeOccupiedIndefinitely,
            SlotSharingStrategy strategy,
            SharedSlotProfileRetriever.SharedSlotProfileRetrieverFactory profiles,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Duration allocationTimeout,
            Function<ExecutionVertexID, ResourceProfile> resourceProfiles) {
        return new SlotSharingExecutionSlotAllocator(provider, slotWillBeOccupiedIndefinitely, strategy, profiles,
                bulkChecker, Time.fromDuration(allocationTimeout), resourceProfiles);
    }
}
