package org.apache.flink.runtime.scheduler;

import org.apache.flink.api.common.resources.ExternalResource;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.clusterframework.types.ResourceProfile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reading the two files: a job's schedulercfg and the TaskManager table beside it. Errors name file and line. */
final class PlacementFiles {
    private PlacementFiles() {}

    /** One line of a schedulercfg: {@code <label>; <TaskManager>}; the label {@code *} is the default line. */
    static final class Line {
        final Path file;
        final int number;
        final String label;
        final String taskManager;

        Line(Path file, int number, String label, String taskManager) {
            this.file = file;
            this.number = number;
            this.label = label;
            this.taskManager = taskManager;
        }

        boolean isDefault() {
            return label.equals("*");
        }

        String where() {
            return file + ":" + number;
        }
    }

    /** One TaskManager of the table: its resource id, the addresses that also name it, its slots and slot size. */
    static final class TaskManager {
        final String id;
        final List<String> addresses;
        final int slots;
        final ResourceProfile slotProfile; // without the external resource
        final String where;

        TaskManager(String id, List<String> addresses, int slots, ResourceProfile slotProfile, String where) {
            this.id = id;
            this.addresses = addresses;
            this.slots = slots;
            this.slotProfile = slotProfile;
            this.where = where;
        }
    }

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new PlacementSchedulerException(file + ": cannot read (" + e.getClass().getSimpleName() + ": "
                    + e.getMessage() + ")");
        }
    }

    private static boolean skip(String line) {
        String t = line.trim();
        return t.isEmpty() || t.startsWith("#");
    }

    /**
     * A contingency section: {@code [lost <TaskManager>]} and the lines after it, up to the next header or the end of
     * the file; its lines move subtasks while that TaskManager is lost.
     */
    static final class Section {
        final Path file;
        final int number; // the header's line
        final String lost; // the header's TaskManager, as written
        final List<Line> lines = new ArrayList<>();

        Section(Path file, int number, String lost) {
            this.file = file;
            this.number = number;
            this.lost = lost;
        }

        String where() {
            return file + ":" + number;
        }
    }

    /** A schedulercfg: the plan (the lines before the first section header) and its contingency sections. */
    static final class Schedulercfg {
        final List<Line> plan;
        final List<Section> sections;

        Schedulercfg(List<Line> plan, List<Section> sections) {
            this.plan = plan;
            this.sections = sections;
        }
    }

    private static final Pattern HEADER = Pattern.compile("^\\[lost ([^\\s\\[\\];]+)\\]$");

    /**
     * A schedulercfg: lines {@code <task name> (<i>/<n>); <TaskManager>} (blank lines and #-comments aside), then any
     * number of sections {@code [lost <TaskManager>]} with lines of the same syntax (no default line).
     */
    static Schedulercfg readSchedulercfg(Path file) {
        List<Line> plan = new ArrayList<>();
        List<Section> sections = new ArrayList<>();
        List<String> lines = readLines(file);
        for (int n = 0; n < lines.size(); n++) {
            String raw = lines.get(n);
            if (skip(raw)) {
                continue;
            }
            String t = raw.trim();
            if (t.startsWith("[")) {
                Matcher header = HEADER.matcher(t.replaceAll("\\s+", " ").replace("[ ", "[").replace(" ]", "]"));
                if (!header.matches()) {
                    throw new PlacementSchedulerException(file + ":" + (n + 1) + ": expected a section header '[lost"
                            + " <TaskManager>]', got '" + t + "'");
                }
                sections.add(new Section(file, n + 1, header.group(1)));
                continue;
            }
            int cut = raw.lastIndexOf(';');
            String label = cut < 0 ? "" : raw.substring(0, cut).trim();
            String tm = cut < 0 ? "" : raw.substring(cut + 1).trim();
            if (label.isEmpty() || tm.isEmpty() || tm.contains(" ")) {
                throw new PlacementSchedulerException(file + ":" + (n + 1) + ": expected '<task name> (<i>/<n>); "
                        + "<TaskManager>' or '*; <TaskManager>', got '" + t + "'");
            }
            Line line = new Line(file, n + 1, label, tm);
            if (sections.isEmpty()) {
                plan.add(line);
                continue;
            }
            Section section = sections.get(sections.size() - 1);
            if (line.isDefault()) {
                throw new PlacementSchedulerException(line.where() + ": a default line '*' inside section '[lost "
                        + section.lost + "]' (line " + section.number + "): a section lists only the subtasks that"
                        + " move; the others keep their plan line");
            }
            section.lines.add(line);
        }
        if (plan.isEmpty()) {
            throw new PlacementSchedulerException(file + ": no placement lines" + (sections.isEmpty() ? "" : " before"
                    + " the first section (line " + sections.get(0).number + ")") + " (an empty file places nothing;"
                    + " remove it to run the job without placement)");
        }
        return new Schedulercfg(plan, sections);
    }

    /** The TaskManager table, or null when there is none. */
    static Map<String, TaskManager> readTaskManagers(Path file) {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        Map<String, TaskManager> out = new LinkedHashMap<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new PlacementSchedulerException(file + ": cannot read (" + e.getMessage() + ")");
        }
        for (int n = 0; n < lines.size(); n++) {
            String raw = lines.get(n);
            if (skip(raw)) {
                continue;
            }
            String where = file + ":" + (n + 1);
            String[] fields = raw.split(";");
            String id = fields[0].trim();
            Map<String, String> kv = new LinkedHashMap<>();
            for (int i = 1; i < fields.length; i++) {
                String[] pair = fields[i].split("=", 2);
                if (pair.length != 2) {
                    throw new PlacementSchedulerException(where + ": expected key=value, got '" + fields[i].trim() + "'");
                }
                kv.put(pair[0].trim(), pair[1].trim());
            }
            if (id.isEmpty() || out.containsKey(id)) {
                throw new PlacementSchedulerException(where + ": " + (id.isEmpty() ? "no TaskManager id" : "TaskManager '"
                        + id + "' listed twice"));
            }
            try {
                int slots = Integer.parseInt(required(kv, "slots", where));
                if (slots < 1) {
                    throw new NumberFormatException("slots must be >= 1");
                }
                ResourceProfile slot = ResourceProfile.newBuilder()
                        .setCpuCores(Double.parseDouble(required(kv, "cpu", where)))
                        .setTaskHeapMemory(MemorySize.parse(required(kv, "task-heap", where)))
                        .setTaskOffHeapMemory(MemorySize.parse(kv.getOrDefault("task-off-heap", "0m")))
                        .setManagedMemory(MemorySize.parse(kv.getOrDefault("managed", "0m")))
                        .setNetworkMemory(MemorySize.parse(kv.getOrDefault("network", "0m")))
                        .build();
                List<String> addresses = new ArrayList<>();
                for (String a : kv.getOrDefault("addresses", "").split(",")) {
                    if (!a.trim().isEmpty()) {
                        addresses.add(a.trim());
                    }
                }
                out.put(id, new TaskManager(id, addresses, slots, slot, where));
            } catch (IllegalArgumentException e) {
                throw new PlacementSchedulerException(where + ": " + e.getMessage());
            }
        }
        return out;
    }

    private static String required(Map<String, String> kv, String key, String where) {
        String v = kv.get(key);
        if (v == null || v.isEmpty()) {
            throw new PlacementSchedulerException(where + ": no " + key + "= (fields: " + Arrays.toString(
                    new String[] {"addresses", "slots", "cpu", "task-heap", "task-off-heap", "managed", "network"}) + ")");
        }
        return v;
    }

    /** A slot profile plus one unit of the TaskManager's own external resource: only that TaskManager can hold it. */
    static ResourceProfile pinned(ResourceProfile slot, String taskManager) {
        return ResourceProfile.newBuilder(slot)
                .setExtendedResource(new ExternalResource(PlacementNames.resourceName(taskManager), 1.0))
                .build();
    }

    static ResourceProfile withoutExtendedResources(ResourceProfile p) {
        return ResourceProfile.newBuilder()
                .setCpuCores(p.getCpuCores())
                .setTaskHeapMemory(p.getTaskHeapMemory())
                .setTaskOffHeapMemory(p.getTaskOffHeapMemory())
                .setManagedMemory(p.getManagedMemory())
                .setNetworkMemory(p.getNetworkMemory())
                .build();
    }
}
