package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequestBulkChecker;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Optional;

/**
 * What the replaced {@code SlotSharingExecutionSlotAllocatorFactory} does, on every Flink line: a job with a
 * schedulercfg gets {@link PlacementSlotSharingStrategy}'s slot sharing groups (each bound to one TaskManager) instead
 * of the configured strategy's, and {@link PlacementSlotProvider}'s clearer failures; a job without one runs exactly
 * as on stock Flink.
 *
 * <p>The replaced class itself lives in the per-line overlays (scheduler/src/&lt;lines&gt;/): the constructor Flink's
 * {@code DefaultSchedulerComponents} calls is the one thing that differs, so each overlay's class is only that
 * constructor, passing its arguments here (a {@code Time} timeout as a {@code Duration}, Flink's default strategy
 * factory where the line passes none).
 *
 * <p>Part of the placement project's scheduler extension; see scheduler/README.md.
 */
abstract class PlacementAllocatorFactory implements ExecutionSlotAllocatorFactory {
    private static final Logger LOG = LoggerFactory.getLogger(SlotSharingExecutionSlotAllocatorFactory.class);

    private final PhysicalSlotProvider slotProvider;
    private final boolean slotWillBeOccupiedIndefinitely;
    private final PhysicalSlotRequestBulkChecker bulkChecker;
    private final Duration allocationTimeout;
    private final SlotSharingStrategy.Factory slotSharingStrategyFactory;

    PlacementAllocatorFactory(
            PhysicalSlotProvider slotProvider,
            boolean slotWillBeOccupiedIndefinitely,
            PhysicalSlotRequestBulkChecker bulkChecker,
            Duration allocationTimeout,
            SlotSharingStrategy.Factory slotSharingStrategyFactory) {
        try {
            PlacementSchedulerBuild.get().checkVersion();
        } catch (PlacementSchedulerException e) {
            LOG.error(e.getMessage());
            throw e;
        }
        this.slotProvider = slotProvider;
        this.slotWillBeOccupiedIndefinitely = slotWillBeOccupiedIndefinitely;
        this.bulkChecker = bulkChecker;
        this.allocationTimeout = allocationTimeout;
        this.slotSharingStrategyFactory = slotSharingStrategyFactory;
    }

    @Override
    public ExecutionSlotAllocator createInstance(ExecutionSlotAllocationContext context) {
        SchedulerBase scheduler = PlacementPlan.schedulerOf(context);
        String job = "job '" + scheduler.getExecutionGraph().getJobName() + "' (" + scheduler.getExecutionGraph().getJobID() + ")";
        StringBuilder what = new StringBuilder();
        Optional<PlacementPlan> plan;
        SlotSharingStrategy strategy;
        try {
            plan = PlacementPlan.load(scheduler, context, what);
            strategy = plan.isPresent()
                    ? new PlacementSlotSharingStrategy(
                            context.getSchedulingTopology(), context.getLogicalSlotSharingGroups(), plan.get())
                    : null;
        } catch (PlacementSchedulerException e) {
            LOG.error("{} ({}): {}: {}", PlacementSchedulerBuild.ACTIVE_LOG_LINE, PlacementSchedulerBuild.get().describe(),
                    job, e.getMessage());
            throw e;
        }
        if (strategy instanceof PlacementSlotSharingStrategy) {
            PlacementSlotSharingStrategy placed = (PlacementSlotSharingStrategy) strategy;
            what.append(": ").append(plan.get().taskManagerOf.size()).append(" subtasks in ");
            placed.requestsOf.forEach((tm, slots) -> what.append(slots.size()).append(" slot(s) on ").append(tm).append(", "));
            what.setLength(what.length() - 2);
            for (PlacementPlan.Contingency c : plan.get().contingencies) {
                what.append("; if ").append(c.lost).append(" is lost: ").append(c.moves.size())
                        .append(" subtask(s) move (").append(c.where).append(")");
            }
        } else {
            strategy = slotSharingStrategyFactory.create(
                    context.getSchedulingTopology(), context.getLogicalSlotSharingGroups(), context.getCoLocationGroups());
        }
        LOG.info("{} ({}): {}: {}", PlacementSchedulerBuild.ACTIVE_LOG_LINE, PlacementSchedulerBuild.get().describe(), job, what);

        PhysicalSlotProvider provider = plan.isPresent() ? new PlacementSlotProvider(slotProvider, plan.get()) : slotProvider;
        SyncPreferredLocationsRetriever locations = new DefaultSyncPreferredLocationsRetriever(context, context);
        SharedSlotProfileRetriever.SharedSlotProfileRetrieverFactory profiles =
                new MergingSharedSlotProfileRetrieverFactory(
                        locations, context::findPriorAllocationId, context::getReservedAllocations);
        ExecutionSlotAllocator allocator = PlacementCompat.newAllocator(
                provider, slotWillBeOccupiedIndefinitely, strategy, profiles, bulkChecker, allocationTimeout,
                context::getResourceProfile);
        if (plan.isPresent() && !plan.get().contingencies.isEmpty()) {
            // the layout is chosen at each (re)scheduling from the TaskManagers alive then
            return new PlacementContingencyAllocator(allocator, (PlacementSlotSharingStrategy) strategy);
        }
        return allocator;
    }
}
