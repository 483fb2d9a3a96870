package org.apache.flink.runtime.scheduler;

import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.apache.flink.runtime.jobmanager.scheduler.NoResourceAvailableException;
import org.apache.flink.runtime.jobmaster.SlotRequestId;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotProvider;
import org.apache.flink.runtime.jobmaster.slotpool.PhysicalSlotRequest;
import org.apache.flink.util.ExceptionUtils;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;

/**
 * The job's slot provider, with a clear word when a placed slot cannot be had. A TaskManager that is neither in the
 * TaskManager table nor has ever given this JobManager a slot is taken as not registered: the job fails at once
 * (restarting cannot help) with a message naming it. Any other is taken as restarting: the job restarts as its restart
 * strategy says, and lands on it again once it is back.
 */
final class PlacementSlotProvider implements PhysicalSlotProvider {
    /** TaskManagers (resource ids) that have given this JVM a placed slot. */
    private static final Set<String> SEEN = ConcurrentHashMap.newKeySet();

    private final PhysicalSlotProvider delegate;
    private final PlacementPlan plan;
    private final Map<String, String> taskManagerOfResource = new HashMap<>();

    PlacementSlotProvider(PhysicalSlotProvider delegate, PlacementPlan plan) {
        this.delegate = delegate;
        this.plan = plan;
        for (String tm : plan.slotOf.keySet()) {
            taskManagerOfResource.put(PlacementNames.resourceName(tm), tm);
        }
    }

    @Override
    public Map<SlotRequestId, CompletableFuture<PhysicalSlotRequest.Result>> allocatePhysicalSlots(
            Collection<PhysicalSlotRequest> requests) {
        Map<SlotRequestId, CompletableFuture<PhysicalSlotRequest.Result>> futures = delegate.allocatePhysicalSlots(requests);
        Map<SlotRequestId, CompletableFuture<PhysicalSlotRequest.Result>> out = new HashMap<>(futures);
        for (PhysicalSlotRequest request : requests) {
            // through the SlotProfile: PhysicalSlotRequest.getPhysicalSlotResourceProfile() is Flink 2.2+ only
            String tm = request.getSlotProfile().getPhysicalSlotResourceProfile().getExtendedResources().keySet().stream()
                    .map(taskManagerOfResource::get).filter(t -> t != null).findFirst().orElse(null);
            CompletableFuture<PhysicalSlotRequest.Result> f = futures.get(request.getSlotRequestId());
            if (tm == null || f == null) {
                continue;
            }
            out.put(request.getSlotRequestId(), f.handle((result, failure) -> {
                if (failure == null) {
                    SEEN.add(result.getPhysicalSlot().getTaskManagerLocation().getResourceID().getResourceIdString());
                    return result;
                }
                Throwable cause = ExceptionUtils.stripCompletionException(failure);
                boolean noSlot = ExceptionUtils.findThrowable(cause, NoResourceAvailableException.class).isPresent()
                        || ExceptionUtils.findThrowable(cause, TimeoutException.class).isPresent();
                throw new CompletionException(noSlot ? explain(tm, cause) : cause);
            }));
        }
        return out;
    }

    private RuntimeException explain(String tm, Throwable failure) {
        // listed in the table (written from the cluster's /taskmanagers) or seen before: it exists, so wait for it
        if (SEEN.contains(tm) || plan.slotsOf.containsKey(tm)) {
            return new PlacementSchedulerException("no slot on TaskManager '" + tm + "' for job '" + plan.jobName
                    + "' (placed there by " + plan.whereOf.get(tm) + "): it is down, or full (other jobs hold its"
                    + " slots); the job restarts as its restart strategy says until it gets one: " + failure, failure);
        }
        return new SuppressRestartsException(new PlacementSchedulerException("TaskManager '" + tm + "' (named at "
                + plan.whereOf.get(tm) + ") has given this JobManager no slot: it is not registered, or does not"
                + " declare external resource '" + PlacementNames.resourceName(tm) + "', or has no room left; job '"
                + plan.jobName + "' fails instead of restarting (" + failure + ")", failure));
    }

    @Override
    public void cancelSlotRequest(SlotRequestId slotRequestId, Throwable cause) {
        delegate.cancelSlotRequest(slotRequestId, cause);
    }

    @Override
    public void disableBatchSlotRequestTimeoutCheck() {
        delegate.disableBatchSlotRequestTimeoutCheck();
    }
}
