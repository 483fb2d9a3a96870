package org.apache.flink.runtime.scheduler;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.clusterframework.types.ResourceProfile;
import org.apache.flink.runtime.executiongraph.ExecutionGraph;
import org.apache.flink.runtime.resourcemanager.WorkerResourceSpec;
import org.apache.flink.runtime.resourcemanager.slotmanager.SlotManagerUtils;
import org.apache.flink.runtime.scheduler.strategy.ExecutionVertexID;
import org.apache.flink.runtime.scheduler.strategy.SchedulingExecutionVertex;

import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A placed job: the TaskManager of each of its subtasks and the slot each TaskManager offers, read from the job's
 * schedulercfg and the TaskManager table beside it ({@value PlacementNames#TASKMANAGERS_FILE}).
 */
final class PlacementPlan {
    final Path file;
    final String jobName;
    final Map<ExecutionVertexID, String> taskManagerOf;
    final Map<String, ResourceProfile> slotOf; // one slot of each TaskManager used, without the external resource
    final Map<String, Integer> slotsOf; // from the table; absent when the slot size came from the cluster config
    final Map<String, String> whereOf; // TaskManager -> the first line placing something there
    final List<Contingency> contingencies; // the file's sections, in file order
    final Map<ExecutionVertexID, String> labelOf; // each subtask's "Name (i/n)", for messages

    /** A section {@code [lost <tm>]}: where its subtasks run instead while {@code lost} is lost. */
    static final class Contingency {
        final String lost; // a resource id
        final String where; // the header's file:line
        final Map<ExecutionVertexID, String> moves; // subtask -> its TaskManager while lost is lost

        Contingency(String lost, String where, Map<ExecutionVertexID, String> moves) {
            this.lost = lost;
            this.where = where;
            this.moves = moves;
        }
    }

    private PlacementPlan(Path file, String jobName, Map<ExecutionVertexID, String> taskManagerOf,
            Map<String, ResourceProfile> slotOf, Map<String, Integer> slotsOf, Map<String, String> whereOf,
            List<Contingency> contingencies, Map<ExecutionVertexID, String> labelOf) {
        this.file = file;
        this.jobName = jobName;
        this.taskManagerOf = taskManagerOf;
        this.slotOf = slotOf;
        this.slotsOf = slotsOf;
        this.whereOf = whereOf;
        this.contingencies = contingencies;
        this.labelOf = labelOf;
    }

    /** The TaskManagers the plan itself uses (in the order of its lines). */
    Set<String> planTaskManagers() {
        return new LinkedHashSet<>(taskManagerOf.values());
    }

    /** The scheduler a slot-allocation context belongs to (Flink internals: the context is its inner class). */
    static SchedulerBase schedulerOf(ExecutionSlotAllocationContext context) {
        for (Class<?> c = context.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (SchedulerBase.class.isAssignableFrom(f.getType())) {
                    try {
                        f.setAccessible(true);
                        return (SchedulerBase) f.get(context);
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        throw new PlacementSchedulerException("cannot reach the scheduler from "
                                + context.getClass().getName() + " (" + e + "); Flink internals differ from those this"
                                + " extension was built against (" + PlacementSchedulerBuild.get().describe() + ")", e);
                    }
                }
            }
        }
        throw new PlacementSchedulerException("the slot allocation context " + context.getClass().getName()
                + " belongs to no scheduler this extension knows (only the default scheduler is supported: set"
                + " jobmanager.scheduler: default)");
    }

    /** What the log says about the job, whether placed or not. */
    static String describeUnplaced(Optional<Path> file) {
        return file.map(f -> "no schedulercfg at " + f + ": stock placement")
                .orElse("placement.scheduler.dir is not set: stock placement");
    }

    /** The job's plan, or empty when the job has no schedulercfg (it runs as stock Flink). */
    static Optional<PlacementPlan> load(SchedulerBase scheduler, ExecutionSlotAllocationContext context,
            StringBuilder logLine) {
        ExecutionGraph graph = scheduler.getExecutionGraph();
        String jobName = graph.getJobName();
        Optional<Path> file = PlacementSchedulerSettings.schedulercfgFor(jobName, graph.getJobConfiguration());
        if (!file.isPresent() || !Files.exists(file.get())) {
            logLine.append(describeUnplaced(file));
            return Optional.empty();
        }
        PlacementFiles.Schedulercfg cfg = PlacementFiles.readSchedulercfg(file.get());
        List<PlacementFiles.Line> lines = cfg.plan;
        Path tableFile = file.get().toAbsolutePath().getParent().resolve(PlacementNames.TASKMANAGERS_FILE);
        Map<String, PlacementFiles.TaskManager> table = PlacementFiles.readTaskManagers(tableFile);

        List<PlacementAssignment.Subtask> subtasks = new ArrayList<>();
        for (SchedulingExecutionVertex v : context.getSchedulingTopology().getVertices()) {
            ExecutionVertexID id = v.getId();
            subtasks.add(new PlacementAssignment.Subtask(id, id.getJobVertexId().toHexString(),
                    scheduler.getExecutionVertex(id).getTaskNameWithSubtaskIndex()));
        }
        Map<ExecutionVertexID, PlacementFiles.Line> lineOf = PlacementAssignment.assign(jobName, subtasks, lines);
        Map<ExecutionVertexID, String> labelOf = new LinkedHashMap<>();
        for (PlacementAssignment.Subtask s : subtasks) {
            labelOf.put(s.id, s.label);
        }

        Map<ExecutionVertexID, String> tmOf = new LinkedHashMap<>();
        Map<String, ResourceProfile> slotOf = new LinkedHashMap<>();
        Map<String, Integer> slotsOf = new LinkedHashMap<>();
        Map<String, String> whereOf = new LinkedHashMap<>();
        for (Map.Entry<ExecutionVertexID, PlacementFiles.Line> e : lineOf.entrySet()) {
            PlacementFiles.Line line = e.getValue();
            String tm = resolve(line.taskManager, line.where(), table, tableFile);
            tmOf.put(e.getKey(), tm);
            slotInfo(tm, line, table, tableFile, slotOf, slotsOf, whereOf);
        }
        List<Contingency> contingencies = new ArrayList<>();
        Map<String, PlacementFiles.Section> sectionOf = new LinkedHashMap<>();
        for (PlacementFiles.Section section : cfg.sections) {
            String lost = resolve(section.lost, section.where(), table, tableFile);
            PlacementFiles.Section earlier = sectionOf.put(lost, section);
            if (earlier != null) {
                throw new PlacementSchedulerException(section.where() + ": a second section for TaskManager '" + lost
                        + "' (the first is line " + earlier.number + ", '[lost " + earlier.lost + "]')");
            }
            Map<ExecutionVertexID, String> moves = new LinkedHashMap<>();
            for (Map.Entry<ExecutionVertexID, PlacementFiles.Line> e
                    : PlacementAssignment.assignSection(jobName, subtasks, section).entrySet()) {
                PlacementFiles.Line line = e.getValue();
                String tm = resolve(line.taskManager, line.where(), table, tableFile);
                if (tm.equals(lost)) {
                    throw new PlacementSchedulerException(line.where() + ": section '[lost " + section.lost + "]' (line "
                            + section.number + ") binds '" + labelOf.get(e.getKey()) + "' to TaskManager '" + tm
                            + "', the one it is lost for");
                }
                moves.put(e.getKey(), tm);
                slotInfo(tm, line, table, tableFile, slotOf, slotsOf, whereOf);
            }
            contingencies.add(new Contingency(lost, section.where(), moves));
        }
        PlacementPlan plan = new PlacementPlan(file.get(), jobName, tmOf, slotOf, slotsOf, whereOf, contingencies,
                labelOf);
        logLine.append("placed by ").append(file.get()).append(table == null ? " (slot size from the JobManager's"
                + " config: no " + tableFile + ")" : " with " + tableFile);
        return Optional.of(plan);
    }

    private static void slotInfo(String tm, PlacementFiles.Line line, Map<String, PlacementFiles.TaskManager> table,
            Path tableFile, Map<String, ResourceProfile> slotOf, Map<String, Integer> slotsOf, Map<String, String> whereOf) {
        if (!slotOf.containsKey(tm)) {
            whereOf.put(tm, line.where());
            if (table != null) {
                slotOf.put(tm, table.get(tm).slotProfile);
                slotsOf.put(tm, table.get(tm).slots);
            } else {
                slotOf.put(tm, slotFromClusterConfig(tm, line, tableFile));
            }
        }
    }

    /** The TaskManager resource id a name means: an id of the table, or an address of exactly one of its entries. */
    private static String resolve(String name, String where, Map<String, PlacementFiles.TaskManager> table,
            Path tableFile) {
        if (table == null || table.containsKey(name)) {
            return name;
        }
        List<String> hits = table.values().stream().filter(t -> t.addresses.contains(name)).map(t -> t.id)
                .collect(Collectors.toList());
        if (hits.size() == 1) {
            return hits.get(0);
        }
        if (hits.size() > 1) {
            throw new PlacementSchedulerException(where + ": '" + name + "' is an address of several TaskManagers"
                    + " (" + String.join(", ", hits) + " in " + tableFile + "): name one by its resource id");
        }
        throw new PlacementSchedulerException(where + ": TaskManager '" + name + "' is not registered with"
                + " this cluster (" + tableFile + " lists " + table.values().stream().map(t -> t.addresses.isEmpty()
                ? t.id : t.id + " " + t.addresses).collect(Collectors.joining(", ")) + "): start it, or plan again");
    }

    /** Without a table: one slot of a TaskManager configured like the JobManager (a homogeneous cluster). */
    private static ResourceProfile slotFromClusterConfig(String tm, PlacementFiles.Line line, Path tableFile) {
        Configuration config = PlacementSchedulerSettings.clusterConfiguration();
        try {
            TaskExecutorProcessSpec spec = TaskExecutorProcessUtils.processSpecFromConfig(config);
            ResourceProfile slot = SlotManagerUtils.generateDefaultSlotResourceProfile(
                    WorkerResourceSpec.fromTaskExecutorProcessSpec(spec), spec.getNumSlots());
            return PlacementFiles.withoutExtendedResources(slot);
        } catch (RuntimeException e) {
            throw new PlacementSchedulerException(line.where() + ": no slot size for TaskManager '" + tm + "': "
                    + tableFile + " does not exist (placement apply writes it; `placement scheduler taskmanagers`"
                    + " prints it) and the JobManager's config does not size a TaskManager (" + e.getMessage() + ")");
        }
    }
}
